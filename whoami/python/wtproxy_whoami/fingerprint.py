"""wtproxy-fp-v1 (whoami/PROTOCOL.md, section 2) in Python.

The same walk as wtproxy's C (whoami/fingerprint.c): folders are opened
relative to their parent's descriptor (no path length limit), entries are
examined with lstat, symlinks are hashed by their target and never
followed, folders an exclude "P/**" covers, or no include can reach, are
not listed at all. Paths are bytes throughout; names come back from
os.listdir(fd) as str and are turned back into the exact bytes with
os.fsencode (PEP 383 makes that lossless).
"""
import errno
import hashlib
import os
import re
import stat
from functools import lru_cache

ALGORITHM = 'wtproxy-fp-v1'
# .env files too: Django (django-environ, python-dotenv), flask run and
# pydantic-settings read them once at start, and no reloader watches them,
# so a server serves the old settings after an edit of .env.
DEFAULT_INCLUDE = ('**/*.py', '**/.env', '**/.env.*')
DEFAULT_EXCLUDE = ('**/.git/**', '**/node_modules/**', '**/.venv/**', '**/venv/**',
                   '**/__pycache__/**')
MAX_PATTERNS = 64
PATTERN_MAX = 256
MAX_FILES = 1048576
EMPTY_DIGEST = hashlib.sha256(b'').hexdigest()

# Running out of descriptors or memory must not pass for "unreadable": the
# fingerprint would silently leave out a folder it could have read.
_RESOURCE = (errno.EMFILE, errno.ENFILE, errno.ENOMEM)
_READ_CHUNK = 65536


class FingerprintError(Exception):
    """The fingerprint cannot be computed (root missing, out of resources)."""


class Fingerprint:
    """files, hash ("sha256:<hex>") and records [(type, path bytes, hex digest)]."""

    def __init__(self, records):
        self.records = records
        h = hashlib.sha256()
        for kind, path, digest in records:
            h.update(kind + path + b'\0' + digest.encode() + b'\n')
        self.files = len(records)
        self.hash = 'sha256:' + h.hexdigest()


def check_patterns(patterns, what):
    """The patterns as a tuple of bytes; ValueError naming what is wrong."""
    if isinstance(patterns, (str, bytes)) or not hasattr(patterns, '__iter__'):
        raise ValueError(f'{what} must be a list of glob strings, not {patterns!r}')
    out = []
    for p in patterns:
        if not isinstance(p, str):
            raise ValueError(f'{what}: {p!r} is not a string')
        b = p.encode('utf-8')
        if not 1 <= len(b) <= PATTERN_MAX or b'\0' in b:
            raise ValueError(f'{what}: {p!r} is not 1 to {PATTERN_MAX} bytes without NUL')
        out.append(b)
    if len(out) > MAX_PATTERNS:
        raise ValueError(f'{what} has {len(out)} patterns, more than {MAX_PATTERNS}')
    return tuple(out)


@lru_cache(maxsize=4096)
def _component(pattern):
    """A regex for one pattern component: '*' any bytes, '?' one byte."""
    parts = [b'.*' if c == b'*' else b'.' if c == b'?' else re.escape(c)
             for c in (pattern[i:i + 1] for i in range(len(pattern)))]
    return re.compile(b''.join(parts), re.DOTALL)


def _split(s):
    return s.split(b'/') if s else []


def glob_match(pattern, path):
    """Whether bytes pattern matches the whole bytes path (PROTOCOL.md 2.2).
    Greedy with one backtrack point at the last '**', as in glob.c."""
    pc, sc = _split(pattern), _split(path)
    i = j = 0
    star_i = star_j = None
    while j < len(sc):
        if i < len(pc) and pc[i] == b'**':
            i += 1
            star_i, star_j = i, j
        elif i < len(pc) and _component(pc[i]).fullmatch(sc[j]):
            i += 1
            j += 1
        elif star_i is not None:
            star_j += 1
            i, j = star_i, star_j
        else:
            return False
    while i < len(pc) and pc[i] == b'**':
        i += 1
    return i == len(pc)


def selected(include, exclude, path):
    return any(glob_match(p, path) for p in include) and \
        not any(glob_match(p, path) for p in exclude)


def _may_match_below(pattern, folder):
    """Whether pattern could match a path strictly below folder: its
    components match folder's up to a '**' or to folder's end, and go on
    below (glob.c's may_match_below)."""
    pc, dc = _split(pattern), _split(folder)
    for i, d in enumerate(dc):
        if i == len(pc):
            return False
        if pc[i] == b'**':
            return True
        if not _component(pc[i]).fullmatch(d):
            return False
    return len(pc) > len(dc)


def pruned(include, exclude, path):
    """Whether the folder path need not be listed: an exclude 'P/**' with P
    matching it, or no include that can match a path below it."""
    return any(p.endswith(b'/**') and glob_match(p[:-3], path) for p in exclude) or \
        not any(_may_match_below(p, path) for p in include)


def _digest_file(dfd, name):
    """(type, hex digest), or None when the file vanished."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY |
                     os.O_CLOEXEC, dir_fd=dfd)
    except OSError as e:
        if e.errno in _RESOURCE:
            raise FingerprintError(f'cannot fingerprint: {e.strerror} (raise the open-files '
                                   'limit with ulimit -n)') from e
        if e.errno in (errno.ENOENT, errno.ELOOP):
            return None
        return b'u', EMPTY_DIGEST
    h = hashlib.sha256()
    try:
        while True:
            chunk = os.read(fd, _READ_CHUNK)
            if not chunk:
                return b'f', h.hexdigest()
            h.update(chunk)
    except OSError:
        return b'u', EMPTY_DIGEST
    finally:
        os.close(fd)


def _digest_link(dfd, name):
    try:
        return b'l', hashlib.sha256(os.fsencode(os.readlink(name, dir_fd=dfd))).hexdigest()
    except FileNotFoundError:
        return None
    except OSError:
        return b'u', EMPTY_DIGEST


def _walk(dfd, prefix, include, exclude, newer_than_ns, records):
    try:
        names = os.listdir(dfd)
    except OSError as e:
        if e.errno in _RESOURCE:
            raise FingerprintError(f'cannot fingerprint: listing {prefix or b"."!r}: '
                                   f'{e.strerror}') from e
        return
    for name in names:
        bname = os.fsencode(name)
        path = prefix + b'/' + bname if prefix else bname
        try:
            st = os.stat(bname, dir_fd=dfd, follow_symlinks=False)
        except OSError as e:
            if e.errno == errno.ENOMEM:
                raise FingerprintError(f'cannot fingerprint: {e.strerror}') from e
            continue
        if stat.S_ISDIR(st.st_mode):
            if pruned(include, exclude, path):
                continue
            try:
                cfd = os.open(bname, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW |
                              os.O_CLOEXEC, dir_fd=dfd)
            except OSError as e:
                if e.errno in _RESOURCE:
                    raise FingerprintError(f'cannot fingerprint: opening {path!r}: '
                                           f'{e.strerror} (raise the open-files limit with '
                                           'ulimit -n)') from e
                continue
            try:
                _walk(cfd, path, include, exclude, newer_than_ns, records)
            finally:
                os.close(cfd)
        elif (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)) and \
                selected(include, exclude, path):
            if newer_than_ns is not None and st.st_mtime_ns > newer_than_ns:
                got = b'u', EMPTY_DIGEST
            elif stat.S_ISLNK(st.st_mode):
                got = _digest_link(dfd, bname)
            else:
                got = _digest_file(dfd, bname)
            if got is None:
                continue
            if len(records) == MAX_FILES:
                raise FingerprintError(f'cannot fingerprint: more than {MAX_FILES} files are '
                                       'selected (narrow the include patterns or add excludes)')
            records.append((got[0], path, got[1]))


def compute(root, include=DEFAULT_INCLUDE, exclude=DEFAULT_EXCLUDE, newer_than_ns=None):
    """The Fingerprint of the tree at root (str or bytes) under the include
    and exclude patterns (lists of str); a file modified after
    newer_than_ns (ns since the epoch) is recorded unknown (answer.py says
    why). FingerprintError when root is not a folder or resources run out;
    ValueError for bad patterns."""
    inc = check_patterns(include, 'include')
    exc = check_patterns(exclude, 'exclude')
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise FingerprintError(f'cannot fingerprint {os.fsdecode(root)}: {e.strerror} '
                               "(give the checkout's folder)") from e
    records = []
    try:
        _walk(fd, b'', inc, exc, newer_than_ns, records)
    finally:
        os.close(fd)
    records.sort(key=lambda r: r[1])
    return Fingerprint(records)
