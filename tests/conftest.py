"""Fixtures for the whole suite."""
import os
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import pytest
from channels.layers import channel_layers
from django.test import override_settings

from dashboard.runtime import embedded_redis
from dashboard.runtime.redis_urls import redis_settings, unix_url
from tests import children

# Folders whose every test carries a marker, so that `-m "not live and not browser"` runs
# the fast part alone (pytest.ini describes them; other modules mark themselves).
FOLDER_MARKERS = {"live": pytest.mark.live, "browser": pytest.mark.browser}


def pytest_collection_modifyitems(items):
    for item in items:
        folder = item.path.relative_to(item.config.rootpath).parts[1]
        if folder in FOLDER_MARKERS:
            item.add_marker(FOLDER_MARKERS[folder])


@pytest.fixture(autouse=True)
def fresh_channel_layer():
    """Each test a channel layer of its own. channels_redis keeps asyncio locks per layer,
    bound to the event loop that first used them, and each async test runs a loop of its
    own: one left locked by a receive cancelled at a test's end failed every later test's
    sockets in that process ("bound to a different event loop"). Daphne runs one loop."""
    yield
    channel_layers.backends.clear()


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    """The Redis of this run: REDIS_URL's, else an embedded one started for the run.

    Request it in every test that talks to Redis (Channels, Celery). Django
    read its settings before any fixture ran, so the embedded server's URL is
    put into them (every Redis setting, as settings.py derives them) and into
    the environment, for the processes tests start; both stay for the run.
    """
    url = os.environ.get("REDIS_URL")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")   # `-n N`: each worker its own
    if url and worker == "gw0":
        yield url
        return
    if url:
        with _redis_of_this_run(_numbered(url, int(worker.removeprefix("gw")))):
            yield os.environ["REDIS_URL"]
        return
    socket = tmp_path_factory.mktemp("redis") / "redis.sock"
    url = unix_url(socket)
    server = children.spawn(embedded_redis.command(socket))
    try:
        embedded_redis.wait_until_ready(url, server)
        with _redis_of_this_run(url):
            yield url
    finally:
        children.stop(server)


def _numbered(url: str, offset: int) -> str:
    """REDIS_URL with its database number moved on by `offset` (xdist's second worker
    uses the next database, and so on)."""
    parts = urlsplit(url)
    number = int(parts.path.strip("/") or 0) + offset
    return urlunsplit(parts._replace(path=f"/{number}"))


@contextmanager
def _redis_of_this_run(url: str):
    """Every Redis setting, as settings.py derives them, and the environment (for the
    processes tests start) on `url`, for the run."""
    with override_settings(**redis_settings(url)), pytest.MonkeyPatch.context() as patch:
        patch.setenv("REDIS_URL", url)
        yield


@pytest.fixture
def v1(sim):
    """The official client on the test's simulated cluster (each folder defines its `sim`)."""
    from kubernetes import client
    api_client = sim.api_client()
    yield client.CoreV1Api(api_client)
    api_client.close()


# --- users: who looks, who acts -------------------------------------------------------------
@pytest.fixture
def viewer(django_user_model):
    """A logged-in person who may look at everything and act on nothing."""
    return django_user_model.objects.create_user("viewer", password="viewer-password")


@pytest.fixture
def operator(django_user_model):
    """A person who may also forget, expire and assume pods (`dashboard.act_on_pods`)."""
    from django.contrib.auth.models import Permission
    user = django_user_model.objects.create_user("operator", password="operator-password")
    user.user_permissions.add(Permission.objects.get(codename="act_on_pods"))
    return user


@pytest.fixture
def viewer_client(client, viewer):
    client.force_login(viewer)
    return client


@pytest.fixture
def operator_client(operator):
    from django.test import Client
    client = Client()
    client.force_login(operator)
    return client


@pytest.fixture
def api_token(operator):
    """A bearer token acting as `operator`."""
    from dashboard.models import ApiToken
    return ApiToken.issue(operator, "tests")[1]


@pytest.fixture
def ws_headers(viewer_client):
    """Websocket handshake headers of a logged-in browser: same-site origin, session cookie."""
    cookie = f"{viewer_client.cookies['sessionid'].key}={viewer_client.cookies['sessionid'].value}"
    return [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1"), (b"cookie", cookie.encode())]


@pytest.fixture
def served():
    """`served(serve_once)` calls `serve_once()` in a loop on a thread, as the owner's loop
    serves commands, until the test ends."""
    import threading
    started = []

    def start(serve_once):
        stop = threading.Event()

        def loop():
            while not stop.is_set():
                serve_once()
        thread = threading.Thread(target=loop, daemon=True, name="test-owner")
        thread.start()
        started.append((stop, thread))

    yield start
    for stop, thread in started:
        stop.set()
        thread.join(10)
