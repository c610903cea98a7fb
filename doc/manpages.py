#!/usr/bin/env python3
"""manpages.py - the manuals wtproxy(1) and wtproxy-CMD(1), from what the
built binary prints (`wtproxy --help`, `wtproxy help CMD`) through scdoc.

usage: manpages.py WTPROXY SCDOC OUTDIR CMD...

CMD... is the list of pages doc/meson.build declares; the build stops if
it is not `wtproxy help --list`. A page says what `wtproxy help CMD` says,
in the same words: its usage lines are the SYNOPSIS, its prose paragraphs
are reflowed, its indented lines (flag tables, examples) are kept as
written, and its exit statuses are the EXIT STATUS section.
"""
import os
import re
import subprocess
import sys

from wtphelp import Wtproxy, check_commands

NAME = 'relay localhost:8000 to the dev server of the caller\'s git worktree'


def escape_prose(line):
    """scdoc reads * and _ as emphasis and \\ as an escape; a leading '-'
    as a list item."""
    line = line.replace('\\', '\\\\').replace('*', '\\*').replace('_', '\\_')
    return '\\' + line if line.startswith('-') else line


def literal(lines):
    # In a literal block scdoc still reads \ as an escape.
    return ['```'] + [ln.replace('\\', '\\\\') for ln in lines] + ['```', '']


def blocks(text):
    """text split into (is_literal, lines) runs: an indented line, or an
    `example:` line, is literal; other lines are prose; a blank line ends a
    run."""
    out = []
    for para in text.strip('\n').split('\n\n'):
        for line in para.split('\n'):
            lit = line.startswith(' ') or line.startswith('example:')
            if out and out[-1][0] == lit and not out[-1][2]:
                out[-1][1].append(line)
            else:
                out.append([lit, [line], False])
        out[-1][2] = True  # the paragraph ends here
    return [(lit, lines) for lit, lines, _ in out]


def body(text):
    """scdoc lines of a help body (after the usage). A prose line alone
    that names what follows ("commands:") is a section heading."""
    out = []
    for lit, lines in blocks(text):
        if lit:
            out += literal(lines)
        elif len(lines) == 1 and re.fullmatch(r'[a-z ]+:', lines[0]):
            out += ['# ' + lines[0][:-1].upper(), '']
        else:
            out += [escape_prose(ln) for ln in joined_dots(lines)] + ['']
    return out


def joined_dots(lines):
    """A prose line that starts with '.' (".wtproxy already there") joined
    to the one before it: scdoc drops a leading dot, and man reflows the
    paragraph anyway."""
    out = []
    for ln in lines:
        if out and ln.startswith('.'):
            out[-1] += ' ' + ln
        else:
            out.append(ln)
    return out


def split_help(text):
    """(usage lines, description, exit status lines) of `wtproxy help CMD`."""
    head, _, exits = text.partition('\nexit status:\n')
    usage, _, desc = head.partition('\n\n')
    return usage.split('\n'), desc, exits.rstrip('\n').split('\n') if exits else []


def command_page(cmd, summary, text, version):
    usage, desc, exits = split_help(text)
    lines = [f'wtproxy-{cmd}(1) "wtproxy {version}"', '', '# NAME', '',
             f'wtproxy-{cmd} - {escape_prose(summary)}', '', '# SYNOPSIS', '']
    lines += literal(usage) + ['# DESCRIPTION', ''] + body(desc)
    if exits:
        lines += ['# EXIT STATUS', ''] + literal(exits)
    lines += ['# SEE ALSO', '', f'*wtproxy*(1); the same text: *wtproxy help {cmd}*', '']
    return '\n'.join(lines)


def main_page(overview, commands, version):
    usage, _, desc = overview.partition('\n\n')
    lines = [f'wtproxy(1) "wtproxy {version}"', '', '# NAME', '', f'wtproxy - {NAME}', '',
             '# SYNOPSIS', ''] + literal(usage.split('\n'))
    lines += ['# DESCRIPTION', ''] + body(desc)
    lines += ['# SEE ALSO', '', ', '.join(f'*wtproxy-{c}*(1)' for c in commands), '']
    return '\n'.join(lines)


def render(scdoc, source, out_path):
    r = subprocess.run([scdoc], input=source, capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        sys.exit(f'scdoc failed on {os.path.basename(out_path)}: {r.stderr.strip()}\n{source}')
    with open(out_path, 'w', encoding='utf-8') as f:
        f.write(r.stdout)


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    wtp, scdoc, outdir, expected = Wtproxy(argv[0]), argv[1], argv[2], argv[3:]
    commands = wtp.commands()
    check_commands(commands, expected, 'man_commands in doc/meson.build')
    version, summaries = wtp.version(), wtp.summaries()
    render(scdoc, main_page(wtp.overview(), commands, version), os.path.join(outdir, 'wtproxy.1'))
    for cmd in commands:
        page = command_page(cmd, summaries[cmd], wtp.help(cmd), version)
        render(scdoc, page, os.path.join(outdir, f'wtproxy-{cmd}.1'))


if __name__ == '__main__':
    main(sys.argv[1:])
