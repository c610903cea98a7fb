#!/usr/bin/env python3
"""tests/pointers.py SRCROOT WTPROXY - every pointer a message gives works
for an installed wtproxy, not only in a checkout. Prints TAP; exits 1
naming the file, the string and the fix.

The strings checked are what a user or an agent reads: the C string
literals of cli/ proxy/ registry/ whoami/ host/ (comments and #include
lines left out, adjacent literals joined), and the strings of the
middleware packages (whoami/python's, docstrings left out; whoami/node's,
comments left out). In them:
- every `wtproxy help NAME` names a command (`wtproxy help --list`) or a
  guide (`wtproxy help --topics`) of the built binary;
- no path of the repository (conf/WHOAMI.md, whoami/python...): an
  installed wtproxy has no checkout; name a guide (cli/topics.c) instead.
  cli/topics.c itself may name the checkout's paths: it says it is one.
The guides `wtproxy help TOPIC` prints are read by the same people: the
ones of conf/ (cli/meson.build's table) and the claims rules name no path
of the repository either, but a guide or a path of an install
(PREFIX/share/doc/wtproxy/conf/vitest-db-setup.mjs: the path's / before
the folder tells it apart). The contracts (the relay, the control
protocol, the dashboard API, the /__whoami protocol) still name the
source files they describe.
"""
import ast
import os
import re
import subprocess
import sys

FOLDERS = ('cli', 'proxy', 'registry', 'whoami', 'host')
HELP = re.compile(r'wtproxy help ([a-z][a-z0-9-]*)')
REPO_PATH = re.compile(r'(?<![\w/.-])(?:conf|cli|proxy|registry|whoami|host|tests|doc|scripts|debian)'
                       r'/[\w.-]*[\w-]')
C_LITERAL = re.compile(r'"((?:\\.|[^"\\\n])*)"')
C_COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)
ABOUT_THE_CHECKOUT = {'cli/topics.c'}
TOPIC_DOC = re.compile(r"^\s*'[a-z-]+': '([^']+)',", re.M)
CONTRACTS = {'proxy/RELAY.md', 'registry/PROTOCOL.md', 'proxy/DASHBOARD.md', 'whoami/PROTOCOL.md'}


def guides(root):
    """The documents cli/meson.build builds in as guides, less the
    contracts."""
    with open(os.path.join(root, 'cli/meson.build'), encoding='utf-8') as f:
        return [d for d in TOPIC_DOC.findall(f.read()) if d not in CONTRACTS]


def c_strings(text):
    """The string literals of C text, adjacent ones joined (as the
    compiler joins them), comments and #include lines left out."""
    text = C_COMMENT.sub(' ', text)
    text = re.sub(r'^\s*#\s*include[^\n]*', '', text, flags=re.M)
    out, end = [], -1
    for m in C_LITERAL.finditer(text):
        if out and re.fullmatch(r'[\s\\]*', text[end:m.start()]):
            out[-1] += m.group(1)
        else:
            out.append(m.group(1))
        end = m.end()
    return out


def py_strings(text):
    """The str constants of Python text that are not docstrings."""
    tree = ast.parse(text)
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docs.add(id(body[0].value))
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def js_strings(text):
    """The string and template literals of JavaScript text, comments left
    out (a // inside a string is kept: literals are matched first)."""
    lit = re.compile(r'''"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`|/\*.*?\*/|//[^\n]*''', re.S)
    return [m.group(0)[1:-1] for m in lit.finditer(text) if m.group(0)[0] in '"\'`']


def sources(root):
    for folder in FOLDERS:
        for d, dirs, files in os.walk(os.path.join(root, folder)):
            dirs[:] = [x for x in dirs if x not in ('node_modules', '__pycache__', 'testvectors')]
            for f in sorted(files):
                path = os.path.join(d, f)
                rel = os.path.relpath(path, root)
                if f.endswith(('.c', '.h')):
                    yield rel, c_strings
                elif rel.startswith('whoami/python/') and f.endswith('.py'):
                    yield rel, py_strings
                elif rel.startswith('whoami/node/') and f.endswith(('.mjs', '.js')):
                    yield rel, js_strings


def names(wtproxy, flag):
    r = subprocess.run([wtproxy, 'help', flag], capture_output=True, text=True, timeout=30)
    return set(r.stdout.split()) if r.returncode == 0 else set()


def main():
    root, wtproxy = sys.argv[1], sys.argv[2]
    known = names(wtproxy, '--list') | names(wtproxy, '--topics')
    problems, checked = [], 0
    for rel, strings in sources(root):
        with open(os.path.join(root, rel), encoding='utf-8') as f:
            text = f.read()
        for s in strings(text):
            checked += 1
            for name in HELP.findall(s):
                if name not in known:
                    problems.append(f'{rel}: "wtproxy help {name}" is no command or guide of '
                                    f'{wtproxy}: add it to cli/topics.c (and cli/meson.build), '
                                    f'or name one of: {" ".join(sorted(known))}')
            if rel in ABOUT_THE_CHECKOUT:
                continue
            for path in REPO_PATH.findall(s):
                problems.append(f'{rel}: "{path}" is a file of the repository, which an '
                                f'installed wtproxy does not have: name a guide instead '
                                f'(wtproxy help TOPIC; wtproxy help --topics lists them), in: {s[:160]}')
    in_guides = []
    docs = guides(root)
    for rel in docs:
        with open(os.path.join(root, rel), encoding='utf-8') as f:
            for n, line in enumerate(f, 1):
                for path in REPO_PATH.findall(line):
                    in_guides.append(f'{rel}:{n}: "{path}" is a file of the repository, which an '
                                     f'installed wtproxy does not have: name a guide (wtproxy '
                                     f'help TOPIC) or its installed path '
                                     f'(PREFIX/share/doc/wtproxy/{path}), in: {line.strip()[:160]}')
    print('1..3')
    print(f'{"not ok" if not known else "ok"} 1 - {wtproxy} names its commands and guides')
    print(f'{"not ok" if problems else "ok"} 2 - {checked} strings name no missing guide and no repository file')
    for p in problems:
        print(f'# {p}')
    print(f'{"not ok" if in_guides or not docs else "ok"} 3 - {len(docs)} guides name no repository file')
    for p in in_guides:
        print(f'# {p}')
    return 1 if problems or in_guides or not known or not docs else 0


if __name__ == '__main__':
    sys.exit(main())
