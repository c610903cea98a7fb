/* why.h - `wtproxy why`: explain how a process's requests are routed. */
#ifndef WTP_WHY_H
#define WTP_WHY_H

/* argv[0] is "why". Returns the exit status: 0 placed with a backend,
 * 1 not placed or no backend, 2 bad arguments. */
int proxy_why_main(int argc, char **argv);

#endif
