"""wtphelp.py - what `wtproxy help` says, read from the built binary.

The command table in cli/main.c is the one source of every command's
name, summary and help; the manuals (manpages.py) and the shell
completions (completions.py) are generated from what the binary prints,
at build time, so they cannot drift from `wtproxy help CMD`.
"""
import re
import subprocess
import sys

# A flag's value as the help writes it: an upper-case name (PORT, DIR,
# [ADDR:]PORT, HOST:PORT) or a choice (on|off). "--head-timeout 2s" in
# prose is an example, not a metavar.
METAVAR = re.compile(r'--([a-z][a-z-]*)'
                     r'(?: ((?:\[[A-Z]+:\])?[A-Z][A-Z0-9]*(?::[A-Z]+)?|[a-z]+(?:\|[a-z]+)+))?')


class Wtproxy:
    """The binary at path, asked once per question."""

    def __init__(self, path):
        self.path = path

    def out(self, *args):
        r = subprocess.run([self.path, *args], capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            sys.exit(f'{self.path} {" ".join(args)} exited {r.returncode}: {r.stderr.strip()}')
        return r.stdout

    def version(self):
        return self.out('--version').split()[-1]

    def overview(self):
        return self.out('--help')

    def commands(self):
        return self.out('help', '--list').split()

    def topics(self):
        """The guides' names (`wtproxy help TOPIC`, cli/topics.c)."""
        return self.out('help', '--topics').split()

    def help(self, cmd):
        return self.out('help', cmd)

    def summaries(self):
        """{command: its line in `wtproxy --help`}."""
        text = self.overview().split('\ncommands:\n', 1)[1].split('\n\n', 1)[0]
        pairs = (line.strip().split(None, 1) for line in text.splitlines())
        return {p[0]: p[1] if len(p) > 1 else '' for p in pairs}


def check_commands(listed, expected, where):
    """Stop the build when the table and the build's list of pages differ."""
    if listed != expected:
        sys.exit(f'wtproxy help --list names {" ".join(listed)} but {where} lists '
                 f'{" ".join(expected)}: a command was added to or removed from the table '
                 f'in cli/main.c; make {where} list the same commands, in the same order')


def flags(help_text):
    """[(flag, metavar or None)] that help_text names, in order of first
    mention; a flag mentioned once with a metavar takes a value."""
    seen = {}
    for m in METAVAR.finditer(help_text):
        name, meta = m.group(1), m.group(2)
        if name not in seen or (meta and not seen[name]):
            seen[name] = meta
    seen.pop('help', None)
    return list(seen.items())


def subcommands(cmd, help_text):
    """The words that follow `wtproxy CMD` in its usage lines when they are
    fixed words (db claim, db release), not values or flags."""
    words = re.findall(rf'wtproxy {re.escape(cmd)} ([a-z][a-z-]*)\b', help_text)
    return list(dict.fromkeys(words))


def runs_a_command(help_text):
    """Whether the usage ends in `-- CMD ARGS...` (run, claim)."""
    return '-- CMD' in help_text.split('\n\n', 1)[0]


def value_kind(flag, meta):
    """How a flag's value is completed: 'worktree', 'file', 'dir', a list
    of choices, or None (a number, a name: nothing to offer)."""
    if meta is None:
        return None
    if flag == 'worktree':
        return 'worktree'
    if '|' in meta:
        return meta.split('|')
    return {'FILE': 'file', 'PATH': 'file', 'DIR': 'dir'}.get(meta)
