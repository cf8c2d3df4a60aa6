"""settings.py reads everything from the environment, with embedded defaults."""
import runpy
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

import dashboard.settings

SETTINGS_FILE = dashboard.settings.__file__
BASE_DIR = Path(SETTINGS_FILE).resolve().parent.parent
ENVIRONMENT = ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS",
               "SCHEDVIEW_CACHE_TTL", "SCHEDVIEW_VAR_DIR", "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS")


@pytest.fixture
def load_settings(monkeypatch):
    """Evaluate a fresh copy of settings.py under exactly the given environment."""
    def load(**environment):
        for name in ENVIRONMENT:
            monkeypatch.delenv(name, raising=False)
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        return runpy.run_path(SETTINGS_FILE)
    return load


def test_embedded_defaults(load_settings):
    s = load_settings()
    var = BASE_DIR / "var"
    assert s["DEBUG"] is True
    assert s["DATABASES"]["default"]["ENGINE"] == "dashboard.runtime.db_backends.sqlite3"
    assert s["DATABASES"]["default"]["NAME"] == str(var / "schedview.sqlite3")
    assert s["EMBEDDED_REDIS_SOCKET"] == var / "redis.sock"
    assert s["REDIS_URL"] == f"unix://{var}/redis.sock"
    assert s["CHANNEL_LAYERS"]["default"]["CONFIG"]["hosts"][0]["address"] == s["REDIS_URL"]
    assert s["CELERY_BROKER_URL"] == f"redis+socket://{var}/redis.sock?virtual_host=0"
    assert s["CELERY_RESULT_BACKEND"] == s["CELERY_BROKER_URL"]
    assert s["SCHEDVIEW_CACHE_TTL"] == 30.0


def test_var_dir_moves_database_and_socket(load_settings, tmp_path):
    s = load_settings(SCHEDVIEW_VAR_DIR=str(tmp_path))
    assert s["DATABASES"]["default"]["NAME"] == str(tmp_path / "schedview.sqlite3")
    assert s["EMBEDDED_REDIS_SOCKET"] == tmp_path / "redis.sock"


def test_postgres_and_redis_over_tcp(load_settings):
    s = load_settings(DATABASE_URL="postgres://postgres@127.0.0.1:5432/test",
                      REDIS_URL="redis://127.0.0.1:6379/0")
    db = s["DATABASES"]["default"]
    assert (db["ENGINE"], db["NAME"], db["USER"], db["HOST"], db["PORT"]) == (
        "dashboard.runtime.db_backends.postgresql", "test", "postgres", "127.0.0.1", 5432)
    assert s["EMBEDDED_REDIS_SOCKET"] is None
    assert s["CHANNEL_LAYERS"]["default"]["CONFIG"]["hosts"][0]["address"] == "redis://127.0.0.1:6379/0"
    assert s["CELERY_BROKER_URL"] == "redis://127.0.0.1:6379/0"


def test_redis_on_a_unix_socket(load_settings):
    s = load_settings(REDIS_URL="unix:///run/redis/redis.sock?db=2")
    assert s["EMBEDDED_REDIS_SOCKET"] is None
    assert s["CHANNEL_LAYERS"]["default"]["CONFIG"]["hosts"][0]["address"] == "unix:///run/redis/redis.sock?db=2"
    assert s["CELERY_BROKER_URL"] == "redis+socket:///run/redis/redis.sock?virtual_host=2"


def test_production_refuses_to_start_without_secret_key(load_settings):
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY"):
        load_settings(DEBUG="0")


def test_production_settings(load_settings):
    s = load_settings(DEBUG="0", SECRET_KEY="k" * 50, ALLOWED_HOSTS="schedview.example.com,localhost",
                      SCHEDVIEW_CACHE_TTL="0")
    assert s["DEBUG"] is False
    assert s["SECRET_KEY"] == "k" * 50
    assert s["ALLOWED_HOSTS"] == ["schedview.example.com", "localhost"]
    assert s["SESSION_COOKIE_SECURE"] is True
    assert s["CSRF_COOKIE_SECURE"] is True
    assert s["SCHEDVIEW_CACHE_TTL"] == 0.0


@pytest.mark.parametrize("environment", [{"SCHEDVIEW_HISTORY_KEEP": "-1"},
                                         {"SCHEDVIEW_PRUNE_PERIOD": "0"}])
def test_a_history_size_or_prune_period_that_cannot_work_is_refused(load_settings, environment):
    with pytest.raises(ImproperlyConfigured, match="SCHEDVIEW_HISTORY_KEEP"):
        load_settings(**environment)


def test_the_rewritten_tables_are_vacuumed_every_30_s_unless_turned_off(load_settings):
    assert load_settings()["CELERY_BEAT_SCHEDULE"]["vacuum"]["schedule"] == 30.0
    assert "vacuum" not in load_settings(SCHEDVIEW_VACUUM_PERIOD="0")["CELERY_BEAT_SCHEDULE"]
    with pytest.raises(ImproperlyConfigured, match="SCHEDVIEW_VACUUM_PERIOD"):
        load_settings(SCHEDVIEW_VACUUM_PERIOD="-1")


def test_the_history_is_pruned_to_a_million_transitions_by_default(load_settings):
    s = load_settings()
    assert s["SCHEDVIEW_HISTORY_KEEP"] == 1_000_000
    assert s["CELERY_BEAT_SCHEDULE"]["prune-history"]["schedule"] == 60.0


def test_health_thresholds_are_warn_fail_pairs(load_settings):
    s = load_settings(SCHEDVIEW_HEALTH_FEED_BACKLOG="10,20", SCHEDVIEW_COMPARE_PERIOD="30")
    assert s["SCHEDVIEW_HEALTH_FEED_BACKLOG"] == (10.0, 20.0)
    assert s["SCHEDVIEW_HEALTH_BIND_FAILURES"] == (10.0, 30.0)
    assert s["SCHEDVIEW_HEALTH_COMPARER_STALE"] == 90.0     # three comparer periods
    assert s["SCHEDVIEW_PROBE_ADDRESS"] == ""


@pytest.mark.parametrize("name, value", [
    ("SCHEDVIEW_HEALTH_FEED_BACKLOG", "10"), ("SCHEDVIEW_HEALTH_STUCK_BINDS", "5,1"),
    ("SCHEDVIEW_HEALTH_POOL_QUEUE", "-1,5"), ("SCHEDVIEW_HEALTH_WINDOW", "0"),
    ("SCHEDVIEW_SAMPLE_PERIOD", "0"), ("SCHEDVIEW_PROBE_ADDRESS", "9100")])
def test_bad_health_settings_are_refused_by_name(load_settings, monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ImproperlyConfigured, match=name):
        load_settings()


@pytest.mark.parametrize("value", ["0", "-5"])
def test_a_watch_silence_bound_must_be_positive(load_settings, monkeypatch, value):
    assert load_settings()["SCHEDVIEW_WATCH_SILENCE"] == 75.0
    monkeypatch.setenv("SCHEDVIEW_WATCH_SILENCE", value)
    with pytest.raises(ImproperlyConfigured, match="SCHEDVIEW_WATCH_SILENCE"):
        load_settings()


def test_the_embedded_sqlite_waits_for_a_writer_instead_of_failing(load_settings, tmp_path,
                                                                  django_db_blocker):
    """A login answered 503 "database is locked": a deferred transaction that had read
    failed at once when another process wrote first. Every transaction now takes the write
    lock when it begins, and waits for it."""
    import threading

    from django.db.backends.sqlite3.base import DatabaseWrapper

    database = load_settings(SCHEDVIEW_VAR_DIR=str(tmp_path))["DATABASES"]["default"]
    assert database["OPTIONS"]["transaction_mode"] == "IMMEDIATE"

    def connect(alias):
        settings = dict(database, TIME_ZONE=None, CONN_MAX_AGE=0, CONN_HEALTH_CHECKS=False,
                        AUTOCOMMIT=True, ATOMIC_REQUESTS=False, TEST={})
        settings["OPTIONS"] = dict(database["OPTIONS"], timeout=10)
        return DatabaseWrapper(settings, alias)

    blocker = django_db_blocker.unblock()
    blocker.__enter__()
    login = connect("login")
    with login.cursor() as cursor:
        cursor.execute("CREATE TABLE sessions (key TEXT, data TEXT)")
    assert login.cursor().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    holding, go_on = threading.Event(), threading.Event()

    def write_for_a_while():     # the owner's batch: a write transaction held a moment
        writer = connect("writer")     # (a connection serves the thread that made it)
        with writer.cursor() as cursor:
            cursor.execute("BEGIN IMMEDIATE")
            cursor.execute("INSERT INTO sessions VALUES ('batch', '')")
            holding.set()
            go_on.wait(10)
            cursor.execute("COMMIT")
        writer.close()
    thread = threading.Thread(target=write_for_a_while)
    thread.start()
    assert holding.wait(10)
    threading.Timer(0.5, go_on.set).start()   # the batch commits while the login waits
    try:
        with login.cursor() as cursor:   # a session's read-then-write, as a login does
            login._start_transaction_under_autocommit()   # what transaction.atomic() runs
            cursor.execute("SELECT count(*) FROM sessions")
            cursor.execute("INSERT INTO sessions VALUES ('login', '')")
            login.connection.commit()
        thread.join(10)
        assert [row[0] for row in login.cursor().execute("SELECT key FROM sessions")] == [
            "batch", "login"]
    finally:
        go_on.set()
        login.close()
        blocker.__exit__(None, None, None)


def test_trusted_proxies_are_networks_and_none_by_default(load_settings, monkeypatch):
    import ipaddress
    assert load_settings()["SCHEDVIEW_TRUSTED_PROXIES"] == []
    monkeypatch.setenv("SCHEDVIEW_TRUSTED_PROXIES", "10.0.0.0/8, 192.0.2.1,fd00::/8")
    assert load_settings()["SCHEDVIEW_TRUSTED_PROXIES"] == [
        ipaddress.ip_network(n) for n in ("10.0.0.0/8", "192.0.2.1/32", "fd00::/8")]


@pytest.mark.parametrize("name, value", [("SCHEDVIEW_TRUSTED_PROXIES", "ingress"),
                                         ("SCHEDVIEW_TRUSTED_PROXIES", "10.0.0.1/8"),
                                         ("SCHEDVIEW_LOGIN_USER_FAILURES", "0"),
                                         ("SCHEDVIEW_LOGIN_ADDRESS_FAILURES", "0")])
def test_bad_login_settings_are_refused_by_name(load_settings, monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ImproperlyConfigured, match=name):
        load_settings()


def test_the_lease_defaults_to_client_gos_durations(load_settings):
    s = load_settings()
    assert (s["SCHEDVIEW_LEASE_DURATION"], s["SCHEDVIEW_LEASE_RENEW_DEADLINE"],
            s["SCHEDVIEW_LEASE_RETRY_PERIOD"]) == (15.0, 10.0, 2.0)


@pytest.mark.parametrize("name, value", [("SCHEDVIEW_LEASE_DURATION", "10"),
                                         ("SCHEDVIEW_LEASE_RENEW_DEADLINE", "1"),
                                         ("SCHEDVIEW_LEASE_RETRY_PERIOD", "0")])
def test_a_lease_that_could_pass_on_while_its_leader_acts_is_refused(load_settings,
                                                                     monkeypatch, name, value):
    """The renew deadline must end before the lease (a leader stops acting before a standby
    may take over), and renewals must come within the deadline."""
    monkeypatch.setenv(name, value)
    with pytest.raises(ImproperlyConfigured, match=name):
        load_settings()
