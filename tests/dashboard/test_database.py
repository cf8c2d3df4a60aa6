"""The test database is the one DATABASE_URL names (SQLite when it is unset)."""
import os

import pytest
from django.contrib.auth.models import User
from django.db import connection


@pytest.mark.django_db
def test_the_configured_database_stores_rows():
    expected = "postgresql" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "sqlite"
    assert connection.vendor == expected
    User.objects.create_user("operator")
    assert User.objects.get(username="operator").is_active
