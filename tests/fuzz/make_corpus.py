#!/usr/bin/env python3
"""make_corpus.py - write the seed corpora under corpus/<target>/ from the
repo's own examples: tests/conformance/{requests,responses}/*.json,
conf/wtproxy.conf, registry/PROTOCOL.md's lines and entry, an example
/__whoami answer. Run again after those change; the files are committed.
Crash regressions (corpus/<target>/regress-*) are written by hand and kept."""
import glob, hashlib, json, os, re, struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..'))
# The fuzz builds' limits are 2 KiB heads: longer seeds only slow mutation.
SEED_MAX = 8192
OPS = {'client': 0, 'backend': 1, 'client_shut': 2, 'backend_close': 3, 'reading': 4}


def write(target, name, data):
    d = os.path.join(HERE, 'corpus', target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


def steps(*items):
    out = b''
    for op, data in items:
        data = data.encode('latin-1') if isinstance(data, str) else data
        data = data[:SEED_MAX]
        out += bytes([OPS[op]]) + struct.pack('<H', len(data)) + data
    return out


def expand(v):
    """A corpus value: a string, or a list of strings and {"repeat", "times"}."""
    if isinstance(v, str):
        return v
    return ''.join(p if isinstance(p, str) else p['repeat'] * p['times'] for p in v)


def conformance(kind):
    for path in sorted(glob.glob(os.path.join(ROOT, 'tests', 'conformance', kind, '*.json'))):
        with open(path) as f:
            yield os.path.basename(path)[:-5], json.load(f)


GET = 'GET / HTTP/1.1\r\nHost: x\r\n\r\n'
OK = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'


def requests():
    for name, case in conformance('requests'):
        raw = expand(case['request']).encode('latin-1')[:SEED_MAX]
        write('fuzz_request', name, bytes([128]) + raw)
        write('fuzz_response', 'req-' + name, steps(('client', raw), ('backend', OK)))
    pipelined = GET + 'HEAD / HTTP/1.1\r\nHost: x\r\n\r\n' + \
        'POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n'
    write('fuzz_request', 'pipelined', bytes([64]) + pipelined.encode())
    upgrade = 'GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n'
    write('fuzz_request', 'upgrade', bytes([255]) + upgrade.encode())


def responses():
    for name, case in conformance('responses'):
        after = [('backend_close', '')] if case.get('after') == 'close' else []
        write('fuzz_response', name, steps(('client', GET), ('backend', expand(case['response'])), *after))
    chunked = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n'
    write('fuzz_response', 'keepalive-two', steps(
        ('client', GET), ('backend', OK), ('client', GET), ('backend', chunked)))
    write('fuzz_response', 'head-then-get', steps(
        ('client', 'HEAD / HTTP/1.1\r\nHost: x\r\n\r\n'), ('backend', OK[:-2]),
        ('client', GET), ('backend', OK)))
    write('fuzz_response', 'continue', steps(
        ('client', 'POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n'),
        ('backend', 'HTTP/1.1 100 Continue\r\n\r\n'), ('client', 'abc'), ('backend', OK)))
    write('fuzz_response', 'upgrade', steps(
        ('client', 'GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n'),
        ('backend', 'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n'),
        ('client', 'ping'), ('backend', 'pong'), ('client_shut', '')))
    write('fuzz_response', 'slow-reader', steps(
        ('reading', ''), ('client', GET),
        ('backend', 'HTTP/1.1 200 OK\r\nContent-Length: 4000\r\n\r\n' + 'x' * 4000),
        ('reading', '')))
    write('fuzz_response', 'eof-body', steps(
        ('client', 'GET / HTTP/1.0\r\n\r\n'), ('backend', 'HTTP/1.0 200 OK\r\n\r\nuntil close'),
        ('backend_close', '')))
    write('fuzz_response', 'backend-dies-mid-body', steps(
        ('client', GET), ('backend', 'HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc'),
        ('backend_close', '')))


def control():
    with open(os.path.join(ROOT, 'registry', 'PROTOCOL.md')) as f:
        text = f.read()
    lines = re.findall(r'`(\{"op":[^`]*\})`', text)
    entry = re.search(r'```json\n(\{"machine".*?\})\n```', text, re.S).group(1)
    entry = json.dumps(json.loads(entry.replace('…', '')))
    own = {'op': 'register', 'front': 8000, 'worktree': '/tmp', 'port': 41234, 'pid': 1,
           'command': 'x', 'ready': False}
    ttl = dict(own, pid=0, ttl_ms=60000, host='::1')
    for uid in (0, 1):
        write('fuzz_control', 'protocol-%d' % uid, bytes([uid]) + '\n'.join(lines).encode())
        write('fuzz_control', 'register-%d' % uid, bytes([uid]) + '\n'.join([
            json.dumps(own), json.dumps({'op': 'ready', 'front': 8000, 'worktree': '/tmp'}),
            json.dumps(ttl), json.dumps({'op': 'list'}),
            json.dumps({'op': 'unregister', 'front': 8000, 'worktree': '/tmp/'})]).encode())
    write('fuzz_control', 'entry', b'\x01' + entry.encode())
    write('fuzz_control', 'garbage', b'\x01{"op":\n[1,2]\n{"op":"nope"}\n\xff\xfe\n{}')


def config():
    with open(os.path.join(ROOT, 'conf', 'wtproxy.conf'), 'rb') as f:
        conf = f.read()
    write('fuzz_config', 'wtproxy.conf', conf)
    uncommented = re.sub(rb'(?m)^# ?([a-z_]+ *=)', rb'\1', conf)
    write('fuzz_config', 'wtproxy.conf-uncommented', uncommented)
    write('fuzz_config', 'small', b'listen = [::1]:8080\nlisten = 127.0.0.1:0\n'
          b'backend = localhost:8001\nhead_timeout = 2s\nmax_head_size = 16k\n'
          b'buffer_size = 1m # comment\ncontrol = /tmp/x.sock\n')


def whoami():
    h = 'sha256:' + hashlib.sha256(b'x').hexdigest()
    answer = {'wtproxy_whoami': 1, 'checkout': '/home/dev/shop/wt-b', 'pid': 4242,
              'started_at': '2026-12-02T08:00:00Z',
              'fingerprint': {'algorithm': 'wtproxy-fp-v1', 'include': ['**/*.py'],
                              'exclude': ['**/node_modules/**', '**/.venv/**'],
                              'files': 87, 'hash': h}}
    write('fuzz_whoami_answer', 'design', json.dumps(answer).encode())
    bad = dict(answer, fingerprint=dict(answer['fingerprint'], hash='sha256:xyz'))
    write('fuzz_whoami_answer', 'bad-hash', json.dumps(bad).encode())
    taking = dict(answer, taking_in={'since': '2026-12-02T08:00:03.120Z'})
    write('fuzz_whoami_answer', 'taking-in', json.dumps(taking).encode())
    write('fuzz_whoami_answer', 'reloads-false', json.dumps(dict(answer, reloads=False)).encode())
    write('fuzz_whoami_answer', 'not-json', b'<html>Not Found</html>')


requests()
responses()
control()
config()
whoami()
