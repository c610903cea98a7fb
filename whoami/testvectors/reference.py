#!/usr/bin/python3
"""reference.py - where the expected values of the test vectors come from.

A deliberately naive wtproxy-fp-v1, written straight from PROTOCOL.md and
sharing no code with the C or the Python implementation: it walks the whole
tree with full bytes paths (no pruning), matches patterns by recursion over
components with a regular expression per component, and hashes in memory.

    reference.py update        rebuild every vector's tree, write "expected"
    reference.py check         the same, but only report differences

As root, the trees are built in a folder nobody can traverse and hashed as
user nobody (setpriv), so that mode 000 means unreadable.
"""
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
NOBODY = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups']


def component_regex(comp):
    out = []
    for b in comp:
        if b == ord('*'):
            out.append(b'.*')
        elif b == ord('?'):
            out.append(b'.')
        else:
            out.append(re.escape(bytes([b])))
    return re.compile(b''.join(out) + b'\\Z', re.DOTALL)


def split(p):
    return p.split(b'/') if p else []


def match(pattern, path):
    pc, sc = split(pattern), split(path)

    def rec(i, j):
        if i == len(pc):
            return j == len(sc)
        if pc[i] == b'**':
            return any(rec(i + 1, k) for k in range(j, len(sc) + 1))
        return j < len(sc) and component_regex(pc[i]).match(sc[j]) is not None and rec(i + 1, j + 1)
    return rec(0, 0)


def candidates(root, rel=b''):
    full = os.path.join(root, rel) if rel else root
    try:
        names = os.listdir(full)
    except PermissionError:
        return
    for name in names:
        r = rel + b'/' + name if rel else name
        try:
            st = os.lstat(os.path.join(root, r))
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            yield from candidates(root, r)
        elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
            yield r, st


def fingerprint(root, include, exclude):
    inc = [p.encode() for p in include]
    exc = [p.encode() for p in exclude]
    records = []
    for r, st in candidates(root):
        if not any(match(p, r) for p in inc) or any(match(p, r) for p in exc):
            continue
        full = os.path.join(root, r)
        if stat.S_ISLNK(st.st_mode):
            kind, data = b'l', os.readlink(full)
        else:
            try:
                with open(full, 'rb') as f:
                    kind, data = b'f', f.read()
            except PermissionError:
                kind, data = b'u', b''
        records.append(kind + r + b'\0' + hashlib.sha256(data).hexdigest().encode() + b'\n')
    records.sort(key=lambda rec: rec[1:rec.index(b'\0')])
    return {'files': len(records), 'hash': 'sha256:' + hashlib.sha256(b''.join(records)).hexdigest()}


def build(vector, root):
    modes = []
    for e in vector['tree']:
        p = bytes.fromhex(e['path_hex']) if 'path_hex' in e else e['path'].encode()
        full = os.path.join(root, p)
        parent = os.path.dirname(full)
        os.makedirs(parent, mode=0o755, exist_ok=True)
        if 'symlink' in e:
            os.symlink(e['symlink'].encode(), full)
        elif e.get('dir'):
            os.makedirs(full, mode=0o755, exist_ok=True)
        else:
            data = bytes.fromhex(e['content_hex']) if 'content_hex' in e else e['content'].encode()
            with open(full, 'wb') as f:
                f.write(data)
            os.chmod(full, 0o644)
        if 'mode' in e:
            modes.append((full, int(e['mode'], 8)))
    for full, mode in sorted(modes, key=lambda m: -m[0].count(b'/')):
        os.chmod(full, mode)


def compute(vector):
    base = tempfile.mkdtemp(prefix='fpref-')
    try:
        os.chmod(base, 0o755)
        root = os.path.join(base.encode(), b'tree')
        os.mkdir(root, 0o755)
        build(vector, root)
        if os.geteuid() == 0:
            out = subprocess.run(NOBODY + [sys.executable, __file__, 'hash', root, json.dumps(vector)],
                                 check=True, capture_output=True).stdout
            return json.loads(out)
        return fingerprint(root, vector['include'], vector['exclude'])
    finally:
        for dirpath, dirnames, _ in os.walk(base):
            for d in dirnames:
                p = os.path.join(dirpath, d)
                if not os.path.islink(p):
                    os.chmod(p, 0o755)
        shutil.rmtree(base)


def main():
    if sys.argv[1] == 'hash':
        v = json.loads(sys.argv[3])
        print(json.dumps(fingerprint(os.fsencode(sys.argv[2]), v['include'], v['exclude'])))
        return 0
    bad = 0
    for name in sorted(os.listdir(HERE)):
        if not name.endswith('.json'):
            continue
        path = os.path.join(HERE, name)
        with open(path) as f:
            vector = json.load(f)
        got = compute(vector)
        if sys.argv[1] == 'update':
            vector['expected'] = got
            with open(path, 'w') as f:
                json.dump(vector, f, indent=1, ensure_ascii=False)
                f.write('\n')
        elif got != vector.get('expected'):
            print(f'{name}: expected {vector.get("expected")}, reference gives {got}')
            bad += 1
        print(f'{name}: {got["files"]} files, {got["hash"]}')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
