"""Whether anything will take a change on disk in for this process
(whoami/PROTOCOL.md, section 1.2: "reloads").

The middlewares compute their fingerprint once per process, so only a new
process can catch up with an edit. Every reloader that makes one (Django's
and Werkzeug's autoreloaders, uvicorn --reload, gunicorn's master,
node --watch, nodemon) is a process above the server. So when every
process between this one and the `wtproxy run` that started it is a shell,
env, or a package manager running a script, nothing will: the answer says
"reloads": false and wtproxy restarts (or refuses) at once instead of
waiting stale_grace. Anything else, or no `wtproxy run` above, is unknown:
nothing is said. So is a shell that runs a loop or a file watcher
(`while inotifywait ...; do ...; done`, `ls *.py | entr -r python ...`): it
makes a new server on a change.
"""
import re

# What may stand between `wtproxy run` and the server without reloading it:
# /proc/PID/comm, or its first word (npm names itself "npm run dev").
PASS_THROUGH = {'sh', 'bash', 'dash', 'zsh', 'env', 'npm', 'npx', 'yarn', 'pnpm'}
WRAPPER = 'wtproxy'
MAX_DEPTH = 8
# What in a shell's command line may start a new server after an edit.
RELOADING_SHELL = re.compile(rb'\b(while|until|inotifywait|entr|watchexec|fswatch|nodemon|watchmedo)\b')


def _comm_and_parent(pid):
    """(comm, ppid) of pid from /proc/PID/stat; comm may hold spaces and
    parentheses, so it is what lies between the first '(' and the last ')'."""
    with open(f'/proc/{pid}/stat', 'rb') as f:
        stat = f.read()
    comm = stat[stat.index(b'(') + 1:stat.rindex(b')')].decode(errors='replace')
    ppid = int(stat[stat.rindex(b')') + 2:].split()[1])
    return comm, ppid


def _shell_may_reload(pid):
    """Whether pid, a shell, runs something that may replace the server."""
    with open(f'/proc/{pid}/cmdline', 'rb') as f:
        return RELOADING_SHELL.search(f.read().replace(b'\0', b' ')) is not None


def nothing_reloads(pid):
    """True when nothing above pid can replace it (see above); False when
    something may, or when /proc cannot tell."""
    try:
        _, parent = _comm_and_parent(pid)
        for _ in range(MAX_DEPTH):
            if parent <= 1:
                return False
            comm, grand = _comm_and_parent(parent)
            if comm == WRAPPER:
                return True
            if comm.split(' ', 1)[0] not in PASS_THROUGH or _shell_may_reload(parent):
                return False
            parent = grand
    except (OSError, ValueError, IndexError):
        pass
    return False
