"""/__whoami for a Tornado app (whoami/PROTOCOL.md), as its first route.

    from wtproxy_whoami.tornado import whoami_route
    routes = [(r'/', MainHandler)]
    if os.environ.get('WTPROXY_PORT'):             # under wtproxy run only
        routes.insert(0, whoami_route())
    app = tornado.web.Application(routes, autoreload=True)

root, include and exclude as the WSGI middleware's, but include defaults
to the Python files, the .env files and every templates/ folder: Tornado
caches its compiled templates (unless debug is on), so an edited template
was served old while the code it fingerprinted was current, and the
gate said so. The answer is made with the route, at start (answer.py).

Tornado's autoreload re-executes this same process on a change (same pid,
same start time): answer.py marks when, so that the new process image's
answer describes the code it loaded, and drops "reloads": false. The
route has it watch the fingerprinted files that are not modules (the
templates): an edited one reloads the app, as an edited module does.
"""
import os

import tornado.autoreload
import tornado.web

from . import fingerprint as fp
from .answer import PATH, Whoami

DEFAULT_INCLUDE = fp.DEFAULT_INCLUDE + ('**/templates/**',)


class WhoamiHandler(tornado.web.RequestHandler):
    def initialize(self, whoami):
        self.whoami = whoami

    def _answer(self):
        status, headers, body = self.whoami.respond(self.request.method)
        self.set_status(int(status.split(' ', 1)[0]))
        for name, value in headers:
            self.set_header(name, value)
        if body:
            self.write(body)

    get = head = post = put = delete = patch = options = _answer


def whoami_route(root=None, include=None, exclude=None):
    """The (path, handler, kwargs) route that answers /__whoami."""
    whoami = Whoami(os.environ.get('WTPROXY_WHOAMI_ROOT') or root,
                    DEFAULT_INCLUDE if include is None else include, exclude)
    for _, rel, _ in whoami.fingerprint.records:
        if not rel.endswith(b'.py'):
            tornado.autoreload.watch(os.path.join(whoami.checkout, os.fsdecode(rel)))
    return (PATH, WhoamiHandler, {'whoami': whoami})
