"""Settings of the shop, a small Django app on PostgreSQL that wtproxy's
end-to-end scenario (tests/e2e/) runs in three worktrees at once.

The database names are the only thing that differs between a worktree
that shares its databases (the usual setup: 'shop' and 'test_shop') and one
that has its own: WT_DB and WT_TEST_DB, from the environment or else from a
`.env.wt` file at the worktree's root (KEY=VALUE lines, as
`wtproxy db claim --write-env .env.wt` writes them). The server, user and
port come from libpq's PGHOST, PGPORT and PGUSER.
"""
import importlib.util
import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_file(path):
    """KEY=VALUE lines of path (blank lines, # comments, an `export `
    prefix and quotes allowed); {} when the file is missing."""
    values = {}
    try:
        text = path.read_text()
    except FileNotFoundError:
        return values
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith('#') or '=' not in line:
            continue
        key, _, value = line.removeprefix('export ').partition('=')
        values[key.strip()] = value.strip().strip('"\'')
    return values


_WT = _env_file(BASE_DIR / '.env.wt')


def _wt(key, default):
    return os.environ.get(key) or _WT.get(key) or default


SECRET_KEY = 'e2e-only-not-secret'
DEBUG = True
ALLOWED_HOSTS = ['localhost', '127.0.0.1', '[::1]', '.localhost']

INSTALLED_APPS = ['store']

MIDDLEWARE = [
    'django.middleware.common.CommonMiddleware',
]

# wtproxy's /__whoami (whoami/python on PYTHONPATH): it tells wtproxy which
# checkout this server serves and which code it loaded. First, so that it
# answers before anything else. Listed only when importable, so the shop
# still runs where the package is not installed.
if importlib.util.find_spec('wtproxy_whoami') is not None:
    MIDDLEWARE.insert(0, 'wtproxy_whoami.django.WhoamiMiddleware')
# What the server loads at start, so what makes it stale when edited: the
# code, and the templates (read once per process, see TEMPLATES).
WTPROXY_WHOAMI = {'include': ['**/*.py', '**/templates/**/*.html']}

ROOT_URLCONF = 'shop.urls'
# Templates are read once per process (as Django 4.1+ does in DEBUG too).
TEMPLATES = [{
    'BACKEND': 'django.template.backends.django.DjangoTemplates',
    'OPTIONS': {'loaders': [('django.template.loaders.cached.Loader', [
        'django.template.loaders.app_directories.Loader'])]},
}]
WSGI_APPLICATION = 'shop.wsgi.application'

DATABASES = {
    'default': {
        'ENGINE': 'django.db.backends.postgresql',
        'NAME': _wt('WT_DB', 'shop'),
        'TEST': {'NAME': _wt('WT_TEST_DB', 'test_shop')},
    },
}
DEFAULT_AUTO_FIELD = 'django.db.models.AutoField'
USE_TZ = True
TIME_ZONE = 'UTC'
