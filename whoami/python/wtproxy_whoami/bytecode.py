"""The checkout's modules this process ran from stale bytecode.

Python takes a module's cached bytecode (__pycache__/NAME.cpython-3X.pyc)
for its source when the size and the mtime in whole seconds that the .pyc
header recorded are the source's. An edit that keeps the size ("v4" ->
"v5") saved within the second in which a reloader compiled the version
before it passes that check: the new process runs the old code, while a
fingerprint of the files says the new one, and wtproxy served the old code
as current (measured: uvicorn --reload, two edits 0.1 s apart, 3 times in 4).

A .pyc that matches its source yet is older than it was compiled from an
earlier write. Such a module is reported unknown (type u), which no disk
matches, so the gate calls the server stale rather than current, and its
.pyc is removed so that the next process (the reload or restart that
follows) compiles the source. A rewrite with the same bytes in that second
is reported too: a needless restart, never a wrong verdict.
"""
import os
import sys

_HEADER = 16  # magic, flags, source mtime, source size (PEP 552)


def _word(header, at):
    return int.from_bytes(header[at:at + 4], 'little')


def _stale(source, cached):
    """Whether Python took cached for source although source is newer."""
    try:
        src, pyc = os.stat(source), os.stat(cached)
        with open(cached, 'rb') as f:
            header = f.read(_HEADER)
    except OSError:
        return False
    return (len(header) == _HEADER and _word(header, 4) == 0  # checked by mtime, not hash
            and _word(header, 8) == int(src.st_mtime) & 0xFFFFFFFF
            and _word(header, 12) == src.st_size & 0xFFFFFFFF
            and pyc.st_mtime_ns < src.st_mtime_ns)


def stale_sources(root):
    """The paths (bytes, relative to root, as the fingerprint names them)
    of the loaded modules under root whose bytecode is stale; each one's
    .pyc is removed."""
    root = os.path.realpath(root)
    found = set()
    for module in list(sys.modules.values()):
        source = getattr(module, '__file__', None)
        cached = getattr(module, '__cached__', None)
        if not isinstance(source, str) or not isinstance(cached, str) or \
                not source.endswith('.py'):
            continue
        source = os.path.realpath(source)
        if not source.startswith(root + os.sep) or not _stale(source, cached):
            continue
        found.add(os.fsencode(os.path.relpath(source, root)))
        try:
            os.unlink(cached)
        except OSError:
            pass
    return found
