"""The /__whoami answer (whoami/PROTOCOL.md, section 1), built once.

Whoami(root, include, exclude) computes the fingerprint when it is
constructed, which the middlewares do when the server process starts:
the answer must describe the code this process loaded, so that an edit made
afterwards makes wtproxy's fresh fingerprint of the disk differ from it.
Computing it at start rather than per request is the whole point; anything
the process imports later (Django imports views on the first request) is
at least as new as the fingerprint, so the gate can at worst call a server
stale that is not, never the other way round.

What it imported before (settings, apps, models) may have been edited
between its import and the fingerprint: hashed as its new contents while
the old ones run, the server was called current. So a file modified after
this process started is reported unknown (type u), which no disk matches:
the gate calls the server stale, and the reload or restart loads and
fingerprints it right. A file edited after the start but before its import
is reported unknown too: a needless restart, never a wrong verdict.
"""
import json
import os
import sys
import time

from . import fingerprint as fp
from . import siblings
from .bytecode import stale_sources
from .reloads import nothing_reloads

PATH = '/__whoami'
ANSWER_MAX = 65536
CHECKOUT_MAX = 4095
# Taken at import, the fallback when /proc cannot tell the process start.
_IMPORTED_AT = time.time()
# Left in the environment by a process that a reloader re-executes in
# place, for the image it becomes: "PID NS", its pid and when (ns since the
# epoch). /proc/self/stat's start time is the process's, which an exec
# keeps: every file edited since looked newer than this image's import of
# it, and the new image was stale for good (Tornado's autoreload).
EXECED = 'WTPROXY_WHOAMI_EXECED'


def find_checkout(start):
    """The realpath of the nearest ancestor of start (itself included) that
    holds .git (a folder, or the file of a linked worktree), else of start."""
    start = os.path.realpath(start)
    d = start
    while True:
        if os.path.lexists(os.path.join(d, '.git')):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return start
        d = parent


def process_started_at():
    """When this process started (unix seconds): /proc/self/stat's start
    time after boot plus the boot time; the import time when that fails.
    /proc/stat's boot time is whole seconds, so the sum may land up to a
    second late: never later than now."""
    try:
        with open('/proc/self/stat', 'rb') as f:
            ticks = int(f.read().rsplit(b')', 1)[1].split()[19])
        with open('/proc/stat', 'rb') as f:
            btime = next(int(line.split()[1]) for line in f if line.startswith(b'btime '))
        return min(btime + ticks / os.sysconf('SC_CLK_TCK'), time.time())
    except (OSError, ValueError, IndexError, StopIteration):
        return _IMPORTED_AT


def edits_after_ns():
    """The time (ns since the epoch) after which an edit may postdate this
    process's import of the file: its start, or None where /proc cannot
    tell it (then no file is reported for its mtime).

    /proc/self/stat's start time (clock ticks after boot, rounded down) is
    turned into the epoch through CLOCK_BOOTTIME: /proc/stat's btime, in
    whole seconds, put it 127 ms early here, so that a file written just
    before the process was reported unknown. Through CLOCK_BOOTTIME it was
    within 5 ms of a write made just before the spawn; one tick (10 ms) is
    added so that such a write is not reported, which is safe because
    Python runs no code of the app until its interpreter is up (75 ms after
    the start, measured on this machine; 10 ms is far below that)."""
    try:
        with open('/proc/self/stat', 'rb') as f:
            ticks = int(f.read().rsplit(b')', 1)[1].split()[19])
        tick = 1 / os.sysconf('SC_CLK_TCK')
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks * tick
    except (OSError, ValueError, IndexError, AttributeError):
        return _reexecuted_at_ns()
    started = int((time.time() - age + tick) * 1e9)
    return max(started, _reexecuted_at_ns() or 0)


def _reexecuted_at_ns():
    """When this process image began (ns since the epoch), if a reloader
    re-executed this same process in place; else None."""
    mark = os.environ.get(EXECED, '').split()
    try:
        return int(mark[1]) if len(mark) == 2 and int(mark[0]) == os.getpid() else None
    except ValueError:
        return None


def _mark_reexec():
    """A reload hook: what the next image of this process reads."""
    os.environ[EXECED] = f'{os.getpid()} {time.time_ns()}'


def _in_place_reloader():
    """Tornado's autoreload module when it watches this process
    (Application(autoreload=True) or debug=True), which re-executes the
    process on a change; None else. Read from sys.modules: never imported."""
    ar = sys.modules.get('tornado.autoreload')
    return ar if ar is not None and getattr(ar, '_io_loops', None) else None


def rfc3339(t):
    """Unix seconds as RFC 3339 UTC with milliseconds: 2026-12-02T08:00:00.250Z."""
    ms = int(round(t * 1000))
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(ms // 1000)) + '.%03dZ' % (ms % 1000)


def _as_loaded(result, checkout):
    """result with each file this process ran from stale bytecode also
    unknown (bytecode.py): the disk's fingerprint never matches it."""
    stale = stale_sources(checkout)
    if not stale:
        return result
    return fp.Fingerprint([(b'u', path, fp.EMPTY_DIGEST) if path in stale else (kind, path, digest)
                           for kind, path, digest in result.records])


class Whoami:
    """The answer for this process: .answer (a dict) and .body (JSON bytes).
    Raises ValueError for bad configuration, fp.FingerprintError when the
    tree cannot be fingerprinted."""

    def __init__(self, root=None, include=None, exclude=None):
        self.checkout = find_checkout(os.getcwd()) if root is None else os.path.realpath(root)
        include = list(fp.DEFAULT_INCLUDE if include is None else include)
        exclude = list(fp.DEFAULT_EXCLUDE if exclude is None else exclude)
        if len(os.fsencode(self.checkout)) > CHECKOUT_MAX:
            raise ValueError(f'the checkout path {self.checkout} is longer than '
                             f'{CHECKOUT_MAX} bytes')
        result = _as_loaded(fp.compute(self.checkout, include, exclude, edits_after_ns()),
                            self.checkout)
        self.fingerprint = result
        self.answer = {
            'wtproxy_whoami': 1,
            'checkout': self.checkout,
            'pid': os.getpid(),
            'started_at': rfc3339(process_started_at()),
            'fingerprint': {'algorithm': fp.ALGORITHM, 'include': include, 'exclude': exclude,
                            'files': result.files, 'hash': result.hash},
        }
        if nothing_reloads(os.getpid()):
            self.answer['reloads'] = False
        self.body = json.dumps(self.answer).encode()
        if len(self.body) > ANSWER_MAX:
            raise ValueError(f'the /__whoami answer would be {len(self.body)} bytes, more '
                             f'than {ANSWER_MAX}: declare fewer or shorter patterns')
        self._hooked = False
        self._hook_reloader()
        siblings.publish(result.records)

    def _hook_reloader(self):
        """An in-place reloader (started before or after this answer was
        made: the route comes before Tornado's Application) is hooked,
        and "reloads": false, said of the processes above only, dropped."""
        ar = _in_place_reloader()
        if ar is None or self._hooked:
            return
        ar.add_reload_hook(_mark_reexec)
        self._hooked = True
        if self.answer.pop('reloads', None) is False:
            self.body = json.dumps(self.answer).encode()

    def respond(self, method):
        """(status line, headers, body) for a request to PATH."""
        self._hook_reloader()
        if method not in ('GET', 'HEAD'):
            return '405 Method Not Allowed', [('Allow', 'GET, HEAD'),
                                              ('Content-Type', 'text/plain'),
                                              ('Content-Length', '0')], b''
        body = self._served_body()
        headers = [('Content-Type', 'application/json'), ('Cache-Control', 'no-store'),
                   ('Content-Length', str(len(body)))]
        return '200 OK', headers, b'' if method == 'HEAD' else body

    def _served_body(self):
        """The body, or, while a sibling worker serves other code, one that
        says so (siblings.py): the gate must not judge the whole server by
        this worker."""
        served = siblings.as_served(self.fingerprint)
        if served is self.fingerprint:
            return self.body
        answer = dict(self.answer, fingerprint=dict(self.answer['fingerprint'], files=served.files,
                                                    hash=served.hash))
        return json.dumps(answer).encode()
