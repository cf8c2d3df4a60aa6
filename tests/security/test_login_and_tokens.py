"""Guessing passwords locks the guesser out (django-axes), every failure is logged; tokens
are listed with their last use, expire if made so, end with their user's password or
deactivation, and are revoked by a command."""
import logging
from datetime import datetime, timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client, override_settings
from django.utils import timezone

from dashboard.models import ApiToken, AuditAction

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


def log_in(client, password, username="viewer", address="203.0.113.7"):
    return client.post("/accounts/login/", {"username": username, "password": password},
                       REMOTE_ADDR=address)


def test_the_right_password_after_too_many_wrong_ones_is_refused(client, viewer, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert log_in(client, "guess").status_code == 200        # the form, saying no
    locked = log_in(client, "guess")
    assert locked.status_code == 429
    assert "Too many wrong passwords" in locked.content.decode()
    assert log_in(client, "viewer-password").status_code == 429
    assert client.get("/nodes/").status_code == 302               # still not logged in


def test_a_lockout_holds_for_that_user_from_that_address_only(client, viewer, settings,
                                                             django_user_model):
    django_user_model.objects.create_user("other", password="other-password")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        log_in(client, "guess")
    assert log_in(Client(), "other-password", username="other").status_code == 302
    assert log_in(Client(), "viewer-password", address="198.51.100.1").status_code == 302


def test_a_success_before_the_limit_starts_the_count_again(client, viewer, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        log_in(client, "guess")
    assert log_in(client, "viewer-password").status_code == 302
    client.post("/accounts/logout/")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert log_in(client, "guess").status_code == 200
    assert log_in(client, "viewer-password").status_code == 302


@override_settings(AXES_COOLOFF_TIME=__import__("datetime").timedelta(seconds=30))
def test_the_lockout_ends_after_the_cool_off(client, viewer, settings):
    from axes.models import AccessAttempt
    for _ in range(settings.AXES_FAILURE_LIMIT):
        log_in(client, "guess")
    assert log_in(client, "viewer-password").status_code == 429
    # Age the attempts past the cool-off instead of waiting for it.
    from django.utils import timezone
    AccessAttempt.objects.update(attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME * 2)
    assert log_in(client, "viewer-password").status_code == 302


def test_every_failure_is_logged_with_who_and_from_where(client, viewer, caplog):
    with caplog.at_level(logging.WARNING, logger="axes"):
        log_in(client, "guess")
        log_in(client, "guess again")
    failures = [r.getMessage() for r in caplog.records if "login failure" in r.getMessage()]
    assert len(failures) == 2
    assert all("viewer" in line and "203.0.113.7" in line for line in failures)
    assert "guess" not in " ".join(failures)    # never the password tried


# --- tokens ----------------------------------------------------------------------------------
def listed(capsys, *args) -> dict[str, list[str]]:
    """`manage.py apitokens`: its rows by token name."""
    call_command("apitokens", *args)
    header, *lines = capsys.readouterr().out.splitlines()
    assert header == "id\tuser\tname\tmade\texpires\tlast used\tstate"
    return {line.split("\t")[2]: line.split("\t") for line in lines}


def test_tokens_are_listed_with_their_last_use_and_never_the_token(operator, viewer, capsys):
    used, token = ApiToken.issue(operator, "ci")
    _, unused = ApiToken.issue(viewer, "laptop")
    before = timezone.now().replace(microsecond=0)
    Client().get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {token}")
    rows = listed(capsys)
    assert rows["ci"][1] == "operator" and rows["ci"][4:] == [
        "never", rows["ci"][5], "ok"]
    assert datetime.fromisoformat(rows["ci"][5]) >= before          # its last use
    assert rows["laptop"][1] == "viewer" and rows["laptop"][4:] == ["never", "never", "ok"]
    everything = "\n".join("\t".join(row) for row in rows.values())
    assert token not in everything and unused not in everything
    assert list(listed(capsys, "--user", "viewer")) == ["laptop"]


def test_a_token_works_until_it_expires_and_is_then_listed_as_expired(operator, capsys):
    row, token = ApiToken.issue(operator, "ci", expires=timezone.now() + timedelta(hours=1))
    tool = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert tool.get("/api/v1/me").status_code == 200
    ApiToken.objects.filter(pk=row.pk).update(expires=timezone.now() - timedelta(seconds=1))
    assert tool.get("/api/v1/me").status_code == 401
    assert tool.delete("/api/v1/pods").status_code == 401    # not a 405 naming the methods
    assert listed(capsys)["ci"][6] == "expired"


def test_apitoken_days_sets_the_expiry_and_refuses_a_span_that_is_not_one(operator, capsys):
    call_command("apitoken", "operator", "--name", "ci", "--days", "30")
    token = capsys.readouterr().out.strip()
    row = ApiToken.objects.get(digest=ApiToken.digest_of(token))
    assert abs(row.expires - timezone.now() - timedelta(days=30)) < timedelta(minutes=1)
    call_command("apitoken", "operator", "--name", "forever")
    assert ApiToken.objects.get(name="forever").expires is None
    for days in ("0", "-1", "nan", "inf", "soon"):
        with pytest.raises(CommandError, match="--days"):
            call_command("apitoken", "operator", "--days", days)


def test_a_new_password_ends_the_tokens_made_before_it(operator, viewer, capsys):
    _, token = ApiToken.issue(operator, "ci")
    _, theirs = ApiToken.issue(viewer, "laptop")
    operator.set_password("a-new-password")
    operator.save()
    assert Client(HTTP_AUTHORIZATION=f"Bearer {token}").get("/api/v1/me").status_code == 401
    assert Client(HTTP_AUTHORIZATION=f"Bearer {theirs}").get("/api/v1/me").status_code == 200
    assert list(listed(capsys)) == ["laptop"]               # revoked, not just refused
    audit = AuditAction.objects.get(action="revoke_token")
    assert (audit.target.endswith("of operator"), audit.message) == (True, "password changed")
    _, fresh = ApiToken.issue(operator, "after")             # one made since works
    assert Client(HTTP_AUTHORIZATION=f"Bearer {fresh}").get("/api/v1/me").status_code == 200


def test_a_password_written_around_save_still_ends_the_tokens(operator, capsys,
                                                            django_user_model):
    """No signal runs for an update(): the token's stamp refuses it all the same."""
    _, token = ApiToken.issue(operator, "ci")
    django_user_model.objects.filter(pk=operator.pk).update(password="!unusable")
    assert Client(HTTP_AUTHORIZATION=f"Bearer {token}").get("/api/v1/me").status_code == 401
    assert listed(capsys)["ci"][6] == "password changed"


def test_a_deactivated_user_loses_the_tokens_for_good(operator, capsys):
    _, token = ApiToken.issue(operator, "ci")
    operator.is_active = False
    operator.save()
    assert not ApiToken.objects.exists()
    assert AuditAction.objects.get(action="revoke_token").message == "user deactivated"
    operator.is_active = True
    operator.save()
    assert Client(HTTP_AUTHORIZATION=f"Bearer {token}").get("/api/v1/me").status_code == 401


def test_logging_in_and_saving_a_user_unchanged_keep_the_tokens(operator, client):
    _, token = ApiToken.issue(operator, "ci")
    assert log_in(client, "operator-password", username="operator").status_code == 302
    operator.first_name = "Ada"
    operator.save()
    assert Client(HTTP_AUTHORIZATION=f"Bearer {token}").get("/api/v1/me").status_code == 200
    assert not AuditAction.objects.filter(action="revoke_token").exists()


def test_a_login_that_rehashes_the_password_keeps_the_tokens(operator, client, settings):
    """An account made under an older hasher (PBKDF2) is rehashed with the preferred one
    (Argon2id) at its next login: the same password, so its tokens go on working."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    operator.set_password("operator-password")
    operator.save()
    _, token = ApiToken.issue(operator, "ci")
    settings.PASSWORD_HASHERS = ["dashboard.accounts.Argon2idHasher",
                                 "django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    assert log_in(client, "operator-password", username="operator").status_code == 302
    operator.refresh_from_db()
    assert operator.password.startswith("argon2$")
    assert Client(HTTP_AUTHORIZATION=f"Bearer {token}").get("/api/v1/me").status_code == 200
    assert not AuditAction.objects.filter(action="revoke_token").exists()


def test_a_revoked_token_is_refused_at_once_and_the_audit_says_so(operator, capsys):
    row, token = ApiToken.issue(operator, "ci")
    _, kept = ApiToken.issue(operator, "other")
    tool = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert tool.get("/api/v1/me").status_code == 200
    call_command("revoketoken", str(row.pk))
    assert f"revoked token {row.pk} of operator (ci)" in capsys.readouterr().out
    assert tool.get("/api/v1/me").status_code == 401
    assert Client(HTTP_AUTHORIZATION=f"Bearer {kept}").get("/api/v1/me").status_code == 200
    audit = AuditAction.objects.get(action="revoke_token")
    assert (audit.target, audit.ok, audit.message) == (f"token {row.pk} of operator", True, "ci")


def test_revoking_every_token_of_a_user(operator, viewer):
    tokens = [ApiToken.issue(operator, name)[1] for name in ("a", "b")]
    _, theirs = ApiToken.issue(viewer)
    call_command("revoketoken", "--user", "operator")
    for token in tokens:
        assert Client(HTTP_AUTHORIZATION=f"Bearer {token}").get("/api/v1/me").status_code == 401
    assert Client(HTTP_AUTHORIZATION=f"Bearer {theirs}").get("/api/v1/me").status_code == 200


@pytest.mark.parametrize("args, message", [((), "one of them"), (("1", "--user", "x"), "one of them"),
                                           (("--user", "nobody"), "has no token")])
def test_a_bad_revocation_says_why(operator, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("revoketoken", *args)


def test_an_unknown_id_in_a_list_revokes_nothing(operator):
    row, token = ApiToken.issue(operator)
    with pytest.raises(CommandError, match=f"no token with id {row.pk + 1}"):
        call_command("revoketoken", str(row.pk), str(row.pk + 1))
    assert ApiToken.objects.filter(pk=row.pk).exists()
    assert not AuditAction.objects.exists()


def test_a_username_no_account_can_have_is_refused_by_the_form(client, viewer):
    response = log_in(client, "guess", username="x" * 5000)
    assert response.status_code == 200
    assert "do not match" in response.content.decode()
    from axes.models import AccessAttempt
    assert not AccessAttempt.objects.exists()    # never reached authentication


@pytest.mark.django_db(transaction=True)
def test_tokens_made_before_the_stamps_keep_working_until_the_password_changes(operator):
    """Migration 0010 stamps every existing token with its user's password of then."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor
    before, after = [("dashboard", "0009_health_sample_feed_lag")], [
        ("dashboard", "0010_api_token_expiry_and_password_stamp")]
    executor = MigrationExecutor(connection)
    try:
        executor.migrate(before)
        old = executor.loader.project_state(before).apps.get_model("dashboard", "ApiToken")
        token = ApiToken.PREFIX + "made-before-stamps"
        old.objects.create(user_id=operator.pk, name="old", digest=ApiToken.digest_of(token))
        executor = MigrationExecutor(connection)
        executor.migrate(after)
    finally:   # the tests after this one need every migration, later ones included
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    tool = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert tool.get("/api/v1/me").status_code == 200
    operator.set_password("another")
    operator.save()
    assert tool.get("/api/v1/me").status_code == 401
