/* usage.h - the commands' help texts (usage.c), one a command of main.c's
 * table; `wtproxy serve`'s is generated from the config keys instead. */
#ifndef WTP_CLI_USAGE_H
#define WTP_CLI_USAGE_H

extern const char cli_usage_run[];
extern const char cli_usage_register[];
extern const char cli_usage_unregister[];
extern const char cli_usage_ls[];
extern const char cli_usage_dashboard[];
extern const char cli_usage_why[];
extern const char cli_usage_fingerprint[];
extern const char cli_usage_claim[];
extern const char cli_usage_release[];
extern const char cli_usage_leases[];
extern const char cli_usage_db[];
extern const char cli_usage_init[];
extern const char cli_usage_doctor[];
extern const char cli_usage_mcp[];
extern const char cli_usage_logs[];
extern const char cli_usage_refusals[];
extern const char cli_usage_restart[];
extern const char cli_usage_stop[];

#endif
