"""python3 -m wtproxy_whoami fingerprint [DIR] [--include GLOB]... [--exclude GLOB]...
[--no-exclude] [--json | --list]: the same arguments, output and exit
statuses as `wtproxy fingerprint` (cli/fingerprint.c), so the two can
be compared byte for byte."""
import os
import sys

from . import fingerprint as fp

PROG = 'python3 -m wtproxy_whoami fingerprint'
USAGE = f'''usage: {PROG} [DIR] [--include GLOB]... [--exclude GLOB]... [--no-exclude]
       [--json | --list]

The code fingerprint (wtproxy-fp-v1) of the files below DIR (default .) that
match an --include and no --exclude, as `wtproxy fingerprint` prints it.
'''
_SHORT = {'"': '\\"', '\\': '\\\\', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r',
          '\t': '\\t'}


class UsageError(Exception):
    pass


def _json(v):
    """JSON as jansson's json_dumps(JSON_ENSURE_ASCII) writes it (", " and
    ": " separators, upper-case \\u escapes), so both CLIs print the same
    bytes. Only what the --json object holds: str, int, list, dict."""
    if isinstance(v, dict):
        return '{' + ', '.join(_json(k) + ': ' + _json(x) for k, x in v.items()) + '}'
    if isinstance(v, list):
        return '[' + ', '.join(_json(x) for x in v) + ']'
    if isinstance(v, int):
        return str(v)
    out = []
    for ch in v:
        o = ord(ch)
        if ch in _SHORT:
            out.append(_SHORT[ch])
        elif o > 0xffff:
            o -= 0x10000
            out.append('\\u%04X\\u%04X' % (0xd800 + (o >> 10), 0xdc00 + (o & 0x3ff)))
        elif o < 0x20 or o > 0x7f:
            out.append('\\u%04X' % o)
        else:
            out.append(ch)
    return '"' + ''.join(out) + '"'


def _pattern(flag, value, into):
    if value is None:
        raise UsageError(f'missing the pattern after "{flag}"')
    try:
        n = len(value.encode('utf-8'))
    except UnicodeEncodeError:
        raise UsageError(f'a pattern must be UTF-8: "{os.fsencode(value).decode("utf-8", "replace")}"')
    if not 1 <= n <= fp.PATTERN_MAX:
        raise UsageError(f'a pattern is 1 to 256 bytes, not "{value}"')
    if len(into) == fp.MAX_PATTERNS:
        raise UsageError(f'at most 64 patterns each; too many at "{value}"')
    into.append(value)


def _parse(argv):
    o = {'dir': None, 'include': [], 'exclude': [], 'json': False, 'list': False,
         'no_exclude': False}
    i = 0
    while i < len(argv):
        a = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if a in ('-h', '--help'):
            return None
        if a in ('--json', '--list'):
            o[a[2:]] = True
        elif a == '--no-exclude':
            o['no_exclude'] = True
        elif a in ('--include', '--exclude'):
            _pattern(a, nxt, o[a[2:]])
            i += 1
        elif a.startswith('-') and a != '-':
            raise UsageError(f'unknown option "{a}"')
        elif o['dir'] is not None:
            raise UsageError(f'one folder only; extra argument "{a}"')
        else:
            o['dir'] = a
        i += 1
    if o['json'] and o['list']:
        raise UsageError('choose one of --json and "--list"')
    return o


def fingerprint_main(argv):
    try:
        o = _parse(argv)
    except UsageError as e:
        print(f'{PROG}: {e} (see {PROG} --help)', file=sys.stderr)
        return 2
    if o is None:
        sys.stdout.write(USAGE)
        return 0
    include = o['include'] or list(fp.DEFAULT_INCLUDE)
    exclude = o['exclude'] if o['exclude'] or o['no_exclude'] else list(fp.DEFAULT_EXCLUDE)
    try:
        result = fp.compute(o['dir'] or '.', include, exclude)
    except fp.FingerprintError as e:
        print(f'{PROG}: {e}', file=sys.stderr)
        return 1
    out = sys.stdout.buffer
    if o['json']:
        out.write(_json({'algorithm': fp.ALGORITHM, 'include': include, 'exclude': exclude,
                         'files': result.files, 'hash': result.hash}).encode() + b'\n')
        return 0
    for kind, path, digest in result.records if o['list'] else ():
        escaped = b''.join(b'\\x%02x' % b if b < 0x20 or b in (0x7f, 0x5c) else bytes([b])
                           for b in path)
        out.write(kind + b' ' + digest.encode() + b' ' + escaped + b'\n')
    out.write(f'{result.hash} ({result.files} file{"" if result.files == 1 else "s"})\n'.encode())
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] != 'fingerprint':
        print('usage: python3 -m wtproxy_whoami fingerprint [DIR] [options] (see --help)',
              file=sys.stderr)
        return 2
    return fingerprint_main(argv[1:])


if __name__ == '__main__':
    sys.exit(main())
