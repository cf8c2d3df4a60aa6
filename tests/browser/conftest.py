"""Browser tests: headless Debian Chromium, driven by Playwright, against the whole stack as
real processes (simulated cluster, cache owner, Celery worker and beat, daphne) on the run's
Redis and test database.

One stack and one browser serve the whole run: starting them costs far more than the tests.
The stack's processes share the test database with the run (pytest-django creates it). A
test reads it as one more of the stack's processes, in autocommit (`database` below), not
in a test transaction: on SQLite that transaction would hold the write lock from its start
(the settings' IMMEDIATE) and one snapshot throughout, so the owner could not write and the
test would not see what it wrote; `transaction=True`'s flush would delete what the owner
wrote, and the users. What a test adds there, it deletes itself.

Run in their own pytest invocation (`make test` does): after Playwright has run, the
pytest-asyncio tests of the rest of the suite fail in the same process.
"""
import os
import sys
import warnings
from pathlib import Path

import pytest
from kubernetes import client, config
from playwright.sync_api import expect, sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "live"))
from tests.browser.browserkit import (
    NOTE_LIVE_SOCKET,
    SCREENSHOTS,
    TIMEOUT_MS,
    is_csp_violation,
    log_in,
)
from tests.live.livestack import Stack, child_env, clear_redis, synced_owner  # noqa: E402

# Playwright's sync API keeps an event loop running in this thread; Django would then refuse
# the ORM calls fixtures make, though they are plain blocking calls in a plain thread.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("SCHEDVIEW_CHROMIUM", "/usr/bin/chromium")
expect.set_options(timeout=TIMEOUT_MS)
OPERATOR = ("browser-operator", "a-long-test-password-1")


def pytest_terminal_summary(terminalreporter):
    if SCREENSHOTS.is_dir() and any(SCREENSHOTS.iterdir()):
        terminalreporter.write_sep("-", "browser screenshots")
        for shot in sorted(SCREENSHOTS.glob("*.png")):
            terminalreporter.write_line(str(shot))


@pytest.fixture(scope="session")
def screenshot_dir():
    """SCREENSHOTS, emptied of an earlier run's pictures."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for old in SCREENSHOTS.glob("*.png"):
        old.unlink()
    return SCREENSHOTS


@pytest.fixture(scope="session")
def django_db_setup(django_test_environment, django_db_blocker):
    """The test database, created for the run whatever the tests' markers say (pytest-django's
    own creates only the databases some test's `django_db` names, and none is marked)."""
    from django.test.utils import setup_databases, teardown_databases
    with django_db_blocker.unblock():
        created = setup_databases(verbosity=0, interactive=False, aliases={"default"})
    yield
    # After the stack's processes: one of theirs may still be closing its session, and a
    # database left behind is no failure of any test (pytest-django's own only warns too).
    with django_db_blocker.unblock():
        try:
            teardown_databases(created, verbosity=0)
        except Exception as error:
            warnings.warn(f"the test database was not dropped: {error}")


@pytest.fixture(autouse=True)
def database(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        yield


@pytest.fixture(scope="session")
def stack(redis_url, django_db_setup, tmp_path_factory):
    """The dashboard's processes on a small simulated cluster, the owner synced."""
    tmp = tmp_path_factory.mktemp("browser-stack")
    kubeconfig = tmp / "kubeconfig"
    clear_redis()
    # Health sampled every second over an 8 s window, so a stall shows within seconds.
    s = Stack(tmp, child_env(tmp, redis_url, kubeconfig, cache_ttl=30, reap_period=1,
                             compare_period=3600, sample_period=1, health_window=8))
    try:
        s.cluster(kubeconfig, "--nodes", "6", "--pods", "60", "--zones", "2",
                  "--bookmark-interval", "1")
        s.celery()
        s.owner("owner")
        synced_owner()
        s.web()
        yield s
    finally:
        s.stop_all()
        print(f"\nbrowser stack logs: {tmp}")


@pytest.fixture(scope="session")
def kube(stack):
    """The official Kubernetes client on the stack's simulated cluster."""
    api_client = config.new_client_from_config(config_file=stack.env["SCHEDVIEW_KUBECONFIG"])
    yield client.CoreV1Api(api_client)
    api_client.close()


@pytest.fixture(scope="session")
def operator_account(stack, django_db_blocker):
    """(username, password) of a user allowed to act on pods, in the stack's database."""
    from django.contrib.auth.models import Permission, User
    with django_db_blocker.unblock():
        user = User.objects.create_user(OPERATOR[0], password=OPERATOR[1])
        user.user_permissions.add(Permission.objects.get(
            content_type__app_label="dashboard", codename="act_on_pods"))
    return OPERATOR


@pytest.fixture(scope="session")
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"no Chromium at {CHROMIUM}: `apt-get install chromium` (Debian), or set "
                    "SCHEDVIEW_CHROMIUM to a Chromium binary", pytrace=False)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def signed_in(browser, stack, operator_account):
    """The cookies of the operator's session, logged in once through the login page."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{stack.web_url}/accounts/login/")
    log_in(page, *operator_account)
    page.wait_for_url(f"{stack.web_url}/", timeout=TIMEOUT_MS)
    state = context.storage_state()
    context.close()
    return state


@pytest.fixture
def page(browser, stack, signed_in):
    """A fresh laptop-sized tab logged in as the operator; fails the test on page errors and
    on anything the Content-Security-Policy refused (Chromium reports it on the console)."""
    context = browser.new_context(storage_state=signed_in, base_url=stack.web_url,
                                  viewport={"width": 1366, "height": 800})
    context.set_default_timeout(TIMEOUT_MS)
    context.add_init_script(NOTE_LIVE_SOCKET)
    tab = context.new_page()
    errors, refused = [], []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.on("console", lambda message: refused.append(message.text)
           if is_csp_violation(message.text) else None)
    yield tab
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"
    assert not refused, f"refused by the Content-Security-Policy: {refused}"


@pytest.fixture
def anonymous_page(browser, stack):
    context = browser.new_context(base_url=stack.web_url)
    context.set_default_timeout(TIMEOUT_MS)
    yield context.new_page()
    context.close()
