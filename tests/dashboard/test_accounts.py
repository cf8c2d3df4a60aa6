"""Roles: `manage.py createuser NAME --role viewer|operator`, a viewer unless told, kept
as groups; passwords hashed with Argon2id, older PBKDF2 hashes still accepted."""
import io
import sys
import time

import pytest
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command

from dashboard.models import ACT_PERMISSION

pytestmark = pytest.mark.django_db


def authenticate(username, password):
    """The account when the password is its own (as the login form checks it), else None."""
    user = User.objects.get(username=username)
    return user if user.check_password(password) else None


def createuser(*args, stdin="") -> str:
    out = io.StringIO()
    saved, sys.stdin = sys.stdin, io.StringIO(stdin)
    try:
        call_command("createuser", *args, stdout=out)
    finally:
        sys.stdin = saved
    return out.getvalue()


def test_a_new_account_is_a_viewer_who_may_act_on_nothing():
    assert "a viewer" in createuser("ada", "--password-stdin", stdin="a-long-password-1\n")
    user = authenticate(username="ada", password="a-long-password-1")
    assert user is not None and not user.has_perm(ACT_PERMISSION)
    assert list(user.groups.values_list("name", flat=True)) == ["viewer"]


def test_an_operator_may_act_and_the_role_can_change():
    said = createuser("bob", "--role", "operator", "--generate")
    password = said.rsplit("password ", 1)[1].strip()
    assert authenticate(username="bob", password=password).has_perm(ACT_PERMISSION)
    createuser("bob", "--role", "viewer", "--update")
    bob = User.objects.get(username="bob")
    assert not bob.has_perm(ACT_PERMISSION)
    assert list(bob.groups.values_list("name", flat=True)) == ["viewer"]
    assert Group.objects.get(name="operator").permissions.get().codename == "act_on_pods"


@pytest.mark.parametrize("args, message", [
    (("carol", "--role", "admin"), "invalid choice"),
    (("viewer", "--generate"), "exists; --update sets its role"),
    (("nobody", "--update"), "no account named 'nobody'"),
    (("dave",), "no terminal to ask a password on"),
])
def test_bad_requests_say_why_and_change_nothing(viewer, args, message):
    before = User.objects.count()
    with pytest.raises((CommandError, SystemExit)) as refused:
        createuser(*args)
    assert refused.type is SystemExit or message in str(refused.value)
    assert User.objects.count() == before


def test_a_login_hashes_with_argon2id_quickly_and_old_hashes_still_work():
    user = User.objects.create_user("eve", password="eve-password-1")
    assert user.password.startswith("argon2$argon2id$")
    started = time.monotonic()
    assert authenticate(username="eve", password="eve-password-1") is not None
    assert time.monotonic() - started < 0.5   # PBKDF2's million rounds took a second
    User.objects.filter(pk=user.pk).update(password=make_password("old-one-1", hasher="pbkdf2_sha256"))
    assert authenticate(username="eve", password="old-one-1") is not None
    assert User.objects.get(pk=user.pk).password.startswith("argon2$")   # rehashed
