"""The login limits through the real login view: a guesser rotating forged X-Forwarded-For
addresses, rotating real addresses against one username, or spraying usernames from one
address is locked out, each lock ending with its cool-off; only a configured proxy's
forwarded address is believed."""
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.test import Client
from django.utils import timezone

pytestmark = [pytest.mark.slow, pytest.mark.django_db]   # dozens of logins a test

INGRESS = "10.42.0.7"          # a pod of the ingress controller


@pytest.fixture(autouse=True)
def limits(settings):
    """The default limits, a trusted ingress network, and a fast password hash: these
    tests log in hundreds of times, and each wrong password costs the hash."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.AXES_FAILURE_LIMIT = 5
    settings.SCHEDVIEW_LOGIN_USER_FAILURES = 20
    settings.SCHEDVIEW_LOGIN_ADDRESS_FAILURES = 30
    settings.SCHEDVIEW_TRUSTED_PROXIES = __import__("ipaddress").ip_network("10.42.0.0/16"),
    return settings


def log_in(password, username="viewer", peer="203.0.113.7", forwarded=None):
    """One POST of the login form from `peer`, with the X-Forwarded-For it carries: the
    status (302 logged in, 200 the form saying no, 429 locked out)."""
    headers = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded is not None else {}
    return Client().post("/accounts/login/", {"username": username, "password": password},
                         REMOTE_ADDR=peer, **headers).status_code


def age_the_failures(settings):
    """Move every failure past the cool-off instead of waiting for it."""
    AccessAttempt.objects.update(attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME
                                 - timedelta(seconds=1))


def test_forged_forwarded_addresses_from_a_client_are_ignored(viewer, limits):
    """The issue's bypass: 20 wrong passwords, each naming another address, then the right
    one. Straight to the web, the header is the client's own words."""
    statuses = [log_in("guess", forwarded=f"198.51.100.{i}") for i in range(20)]
    assert statuses[:4] == [200] * 4 and set(statuses[4:]) == {429}
    assert log_in("viewer-password", forwarded="198.51.100.99") == 429
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.7"}


def test_through_the_ingress_only_the_address_it_saw_counts(viewer, limits):
    """The ingress appends the address it saw; what the client wrote is further left."""
    statuses = [log_in("guess", peer=INGRESS, forwarded=f"198.51.100.{i}, 203.0.113.7")
                for i in range(6)]
    assert statuses == [200] * 4 + [429] * 2
    assert log_in("viewer-password", peer=INGRESS, forwarded="203.0.113.7") == 429
    # Another person behind the same ingress is not locked out by it.
    assert log_in("viewer-password", peer=INGRESS, forwarded="192.0.2.10") == 302
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.7"}


def test_one_username_from_many_addresses_is_locked_out_until_the_cool_off(viewer, limits):
    statuses = [log_in("guess", peer=INGRESS, forwarded=f"198.51.100.{i}") for i in range(20)]
    assert statuses == [200] * 19 + [429]
    # The right password from an address that never failed is refused too...
    assert log_in("viewer-password", peer=INGRESS, forwarded="192.0.2.10") == 429
    assert log_in("guess", peer=INGRESS, forwarded="192.0.2.11") == 429
    # ...while other usernames from those addresses are not.
    assert log_in("x", username="nobody", peer=INGRESS, forwarded="198.51.100.1") == 200
    age_the_failures(limits)
    assert log_in("viewer-password", peer=INGRESS, forwarded="192.0.2.10") == 302


def test_tries_while_locked_out_are_refused_and_do_not_prolong_the_lock(viewer, limits):
    for i in range(20):
        log_in("guess", peer=f"198.51.100.{i}")
    assert [log_in("guess", peer=f"192.0.2.{i}") for i in range(5)] == [429] * 5
    assert AccessAttempt.objects.count() == 20            # the refused tries left no trace
    age_the_failures(limits)
    assert log_in("viewer-password", peer="192.0.2.1") == 302


def test_many_usernames_from_one_address_are_locked_out(viewer, limits, django_user_model):
    statuses = [log_in("guess", username=f"user-{i}") for i in range(30)]
    assert statuses == [200] * 29 + [429]
    assert log_in("viewer-password") == 429                         # even a real account
    assert log_in("viewer-password", peer="192.0.2.10") == 302      # from elsewhere it works
    age_the_failures(limits)
    assert log_in("viewer-password") == 302


def test_logging_into_ones_own_account_does_not_clear_an_addresss_count(viewer, limits):
    """With axes' reset a success wiped every failure of its address: a guesser with an
    account of their own could spray 29 usernames, log in, and spray again."""
    assert [log_in("guess", username=f"user-{i}") for i in range(15)] == [200] * 15
    assert log_in("viewer-password") == 302
    assert [log_in("guess", username=f"user-{i}") for i in range(15, 29)] == [200] * 14
    assert log_in("viewer-password") == 302
    assert log_in("guess", username="user-29") == 429


def test_a_success_still_clears_that_usernames_own_mistakes(viewer, limits):
    for _ in range(2):
        assert [log_in("guess") for _ in range(4)] == [200] * 4
        assert log_in("viewer-password") == 302
