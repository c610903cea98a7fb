"""pytest-django on this worktree's claimed test database.

In the project's conftest.py::

    from wtproxy_whoami.pytest_db import django_db_keepdb, django_db_modify_db_settings  # noqa: F401

Fixtures a conftest defines override pytest-django's. The claim is the
same `wtproxy db claim` as ClaimingTestRunner's (wtproxy_whoami.django_db),
made before pytest-django creates the test database; the database is
kept between runs like --reuse-db (wtproxy recreates it when the
migrations change). Under pytest-xdist each worker claims (the same name:
the claim serialises and keeps it) and then gets pytest-django's _gwN
suffix, as without wtproxy.
"""
import pytest

from .django_db import claim_test_databases


@pytest.fixture(scope="session")
def django_db_keepdb():
    """Keep the claimed database (pytest-django then skips its teardown)."""
    return True


@pytest.fixture(scope="session")
def django_db_modify_db_settings(request):
    """Claim first, then pytest-django's tox/xdist suffixes."""
    claim_test_databases(request.config.option.verbose + 1)  # pytest: 0 is the default
    request.getfixturevalue("django_db_modify_db_settings_parallel_suffix")
