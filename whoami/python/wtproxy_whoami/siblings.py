"""The answers of this process's sibling workers: one server, several processes.

gunicorn (and uvicorn --workers, any prefork server) runs the app in
workers that a master forks, each of which imports the app and makes its
own answer at its start. wtproxy asks /__whoami of one of them and judges
the server by it, while a request goes to any. Workers of two generations
run side by side: gunicorn --reload misses an edit made within its first
second of a worker (its own race), and a worker that dies (a timeout,
--max-requests, a kill) is replaced by one that loads the code on disk
now. Then one worker's fresh answer had a server called current while the
other served the old code: tests passed on code no longer on disk.

So each worker leaves its fingerprint's records in a file named by its
parent (the master: pid and start, so a reused pid is another master) and
itself; the answer of any worker marks every file on which a live sibling
loaded other contents unknown (type u), which no disk matches: the gate
calls the server stale until every worker loads the same code, as a
restart makes them. A process alone under its parent (runserver under its
autoreloader) reads only its own file. Files of processes gone are removed
when seen.
"""
import json
import os
import tempfile

from . import fingerprint as fp


def _start_ticks(pid):
    """pid's start time in clock ticks after boot (/proc), None if gone."""
    try:
        with open(f'/proc/{pid}/stat', 'rb') as f:
            return int(f.read().rsplit(b')', 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _folder():
    base = os.environ.get('XDG_RUNTIME_DIR') or tempfile.gettempdir()
    return os.path.join(base, f'wtproxy-whoami-{os.getuid()}')


def _family():
    """This process's parent as a file name prefix: "PPID.START."."""
    ppid = os.getppid()
    return f'{ppid}.{_start_ticks(ppid)}.'


def publish(records):
    """Leave this process's records for its siblings; best effort (a
    worker that cannot write is judged by its own answer alone)."""
    folder = _folder()
    name = f'{_family()}{os.getpid()}.{_start_ticks(os.getpid())}.json'
    data = {os.fsdecode(path): (kind + b':').decode() + digest for kind, path, digest in records}
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        tmp = os.path.join(folder, f'.{name}.tmp')
        with open(tmp, 'w') as f:
            json.dump(data, f)
        os.replace(tmp, os.path.join(folder, name))
    except OSError:
        pass


def _live_siblings():
    """{path: "kind:digest"} of each live sibling worker (not this one)."""
    folder, family, own = _folder(), _family(), os.getpid()
    try:
        names = [n for n in os.listdir(folder) if n.startswith(family) and n.endswith('.json')]
    except OSError:
        return []
    found = []
    for name in names:
        pid, start = name[len(family):-len('.json')].split('.', 1)
        if int(pid) == own:
            continue
        if str(_start_ticks(int(pid))) != start:
            _remove(os.path.join(folder, name))
            continue
        try:
            with open(os.path.join(folder, name)) as f:
                found.append(json.load(f))
        except (OSError, ValueError):
            continue  # being replaced, or half written by one that died
    return found


def _remove(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def as_served(result):
    """result, or, when a live sibling loaded other contents of some file
    (or other files), a fingerprint with each such file unknown."""
    siblings = _live_siblings()
    if not siblings:
        return result
    own = {os.fsdecode(path): (kind + b':').decode() + digest for kind, path, digest in result.records}
    differs = {path for s in siblings for path in set(s) | set(own) if s.get(path) != own.get(path)}
    if not differs:
        return result
    records = [(b'u', path, fp.EMPTY_DIGEST) if os.fsdecode(path) in differs else (kind, path, digest)
               for kind, path, digest in result.records]
    known = {os.fsdecode(path) for _, path, _ in records}
    records += [(b'u', os.fsencode(path), fp.EMPTY_DIGEST) for path in sorted(differs - known)]
    return fp.Fingerprint(sorted(records, key=lambda r: r[1]))
