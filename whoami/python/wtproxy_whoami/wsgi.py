"""WSGI middleware serving /__whoami (whoami/PROTOCOL.md) for any WSGI app.

    from wtproxy_whoami.wsgi import WhoamiWSGIMiddleware
    application = WhoamiWSGIMiddleware(application)      # development only

root defaults to WTPROXY_WHOAMI_ROOT, else the realpath of the nearest
ancestor of the working folder that holds .git, else the working folder;
include and exclude default to the patterns of fingerprint.py. The
fingerprint is computed here, once, when the server wraps its app at start
(see answer.py for why). Every other path reaches the app untouched.
"""
import os

from .answer import PATH, Whoami


class WhoamiWSGIMiddleware:
    def __init__(self, app, root=None, include=None, exclude=None):
        self.app = app
        self.whoami = Whoami(os.environ.get('WTPROXY_WHOAMI_ROOT') or root, include, exclude)

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO') != PATH:
            return self.app(environ, start_response)
        status, headers, body = self.whoami.respond(environ.get('REQUEST_METHOD', 'GET'))
        start_response(status, headers)
        return [body]
