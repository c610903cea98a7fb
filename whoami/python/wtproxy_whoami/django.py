"""Django middleware serving /__whoami (whoami/PROTOCOL.md) in development.

MIDDLEWARE = ['wtproxy_whoami.django.WhoamiMiddleware', ...]   (first)

Active only when settings.DEBUG is True; otherwise its constructor raises
MiddlewareNotUsed and Django drops it, so it costs nothing in production.
Optional settings.WTPROXY_WHOAMI = {"root": ..., "include": [...],
"exclude": [...]}; the environment variable WTPROXY_WHOAMI_ROOT overrides
root. The default root is the realpath of the nearest ancestor of
settings.BASE_DIR (else of the working folder) that holds .git (a folder,
or a linked worktree's .git file), else BASE_DIR itself.

The fingerprint is computed once per process, when Django builds its
middleware at start (see answer.py for why it must not be per request).
"""
import os

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, MiddlewareNotUsed
from django.http import HttpResponse

from .answer import PATH, Whoami, find_checkout
from .fingerprint import FingerprintError

_KEYS = {'root', 'include', 'exclude'}
# One answer per process and configuration: Django may build its handler
# more than once (a second handler must not describe later code).
_answers = {}


def _config():
    conf = getattr(settings, 'WTPROXY_WHOAMI', None) or {}
    if not isinstance(conf, dict) or not set(conf) <= _KEYS:
        raise ImproperlyConfigured(
            'settings.WTPROXY_WHOAMI must be a dict with only the keys root, include and '
            f'exclude, not {conf!r} (see wtproxy help whoami)')
    root = os.environ.get('WTPROXY_WHOAMI_ROOT') or conf.get('root')
    if root is None:
        root = find_checkout(getattr(settings, 'BASE_DIR', None) or os.getcwd())
    include, exclude = conf.get('include'), conf.get('exclude')
    return os.fspath(root), include, exclude


def _whoami():
    root, include, exclude = _config()
    key = (root, repr(include), repr(exclude))
    if key not in _answers:
        try:
            _answers[key] = Whoami(root, include, exclude)
        except (ValueError, FingerprintError) as e:
            raise ImproperlyConfigured(f'wtproxy_whoami: {e} (settings.WTPROXY_WHOAMI, '
                                       'see wtproxy help whoami)') from e
    return _answers[key]


class WhoamiMiddleware:
    def __init__(self, get_response):
        if not settings.DEBUG:
            raise MiddlewareNotUsed('wtproxy_whoami serves /__whoami only when DEBUG is True')
        self.get_response = get_response
        self.whoami = _whoami()

    def __call__(self, request):
        if request.path_info != PATH:
            return self.get_response(request)
        status, headers, body = self.whoami.respond(request.method)
        response = HttpResponse(body, status=int(status[:3]))
        for name, value in headers:
            response[name] = value
        return response
