"""wtproxy_whoami: the /__whoami contract of wtproxy for Python dev servers.

- wtproxy_whoami.django.WhoamiMiddleware: Django, active only when DEBUG.
- wtproxy_whoami.wsgi.WhoamiWSGIMiddleware: any WSGI app.
- wtproxy_whoami.asgi.WhoamiASGIMiddleware: any ASGI app (FastAPI, Starlette).
- wtproxy_whoami.fingerprint.compute: the code fingerprint wtproxy-fp-v1.
- python3 -m wtproxy_whoami fingerprint: the same output as `wtproxy fingerprint`.
- wtproxy_whoami.django_db: claimed_databases() and ClaimingTestRunner, the
  worktree's own dev and test databases (wtproxy help django-tests);
  wtproxy_whoami.pytest_db: the same for pytest-django.

See `wtproxy help whoami` and `wtproxy help whoami-protocol`.
"""
