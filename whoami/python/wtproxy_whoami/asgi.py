"""ASGI middleware serving /__whoami (whoami/PROTOCOL.md) for any ASGI 3 app
(FastAPI, Starlette), under uvicorn or any other ASGI server.

    from wtproxy_whoami.asgi import WhoamiASGIMiddleware
    app = WhoamiASGIMiddleware(app)              # development only

root defaults to WTPROXY_WHOAMI_ROOT, else the realpath of the nearest
ancestor of the working folder that holds .git, else the working folder;
include and exclude default to the patterns of fingerprint.py. The
fingerprint is computed here, once, when the app is wrapped at start (see
answer.py for why), so a request costs no file system work and never
blocks the event loop. Starlette's add_middleware works too, but builds
the middleware at the app's first event: the lifespan startup, or under
--lifespan off the first request, maybe after an edit the process never
loaded (conf/WHOAMI.md says to wrap instead). Only http requests to the
path are answered; every other request and every websocket and lifespan
scope reaches the app untouched.
"""
import os

from .answer import PATH, Whoami


def _asgi_headers(headers):
    """answer.py's (name, value) strings as ASGI wants them: lowercase bytes."""
    return [(name.lower().encode('latin-1'), value.encode('latin-1')) for name, value in headers]


class WhoamiASGIMiddleware:
    def __init__(self, app, root=None, include=None, exclude=None):
        self.app = app
        self.whoami = Whoami(os.environ.get('WTPROXY_WHOAMI_ROOT') or root, include, exclude)

    async def __call__(self, scope, receive, send):
        if scope['type'] != 'http' or scope.get('path') != PATH:
            return await self.app(scope, receive, send)
        # The request body (there is none for GET and HEAD) is left unread:
        # the server discards it, as it does for any app that ignores it.
        status, headers, body = self.whoami.respond(scope.get('method', 'GET'))
        await send({'type': 'http.response.start', 'status': int(status.split(' ', 1)[0]),
                    'headers': _asgi_headers(headers)})
        await send({'type': 'http.response.body', 'body': body})
