"""list_pods: Kubernetes label selector strings plus an optional pod_filter; assumed pods
are listed too; malformed selectors raise ValueError."""

import pytest

from schedcache import Cache

import tests.schedcache.builders as b
import tests.schedcache.reference as ref

POD_LABELS = {
    "web-a": {"app": "web", "tier": "frontend", "env": "a"},
    "web-b": {"app": "web", "tier": "db", "env": "b", "canary": "true"},
    "db-c": {"app": "db", "tier": "db", "env": "c", "gpu": ""},
    "gpu-a": {"app": "ml", "env": "a", "gpu": "nvidia"},
    "bare": {},
    "dotted": {"example.com/tier": "db", "app": "web_2", "ver": "1.2-rc"},
}


@pytest.fixture
def cache():
    c = Cache(ttl=10)
    c.add_node(b.node("node-1"))
    for i, (name, labels) in enumerate(sorted(POD_LABELS.items())):
        p = b.pod(name, "node-%d" % (1 + i % 2), labels=labels)
        if name == "web-b":
            c.assume_pod(p)  # assumed pods are listed too
        else:
            c.add_pod(p)
    return c


def names(pods):
    return sorted(p["metadata"]["name"] for p in pods)


ALL = sorted(POD_LABELS)
NOT_WEB = ["bare", "db-c", "dotted", "gpu-a"]
SELECTORS = [
    ("", ALL),
    ("app=web", ["web-a", "web-b"]),
    ("app==web", ["web-a", "web-b"]),
    ("app = web", ["web-a", "web-b"]),
    ("a==b", []),
    ("app!=web", NOT_WEB),  # != matches pods without the label
    ("app=web,tier!=db", ["web-a"]),
    ("app=web, tier!=db", ["web-a"]),
    ("env in (a,b)", ["gpu-a", "web-a", "web-b"]),
    ("env in (a, b)", ["gpu-a", "web-a", "web-b"]),
    ("env in (z)", []),
    ("env notin (a)", ["bare", "db-c", "dotted", "web-b"]),  # notin matches pods without the label
    ("env notin (a,b,c)", ["bare", "dotted"]),
    ("!canary", ["bare", "db-c", "dotted", "gpu-a", "web-a"]),
    ("canary", ["web-b"]),
    ("gpu", ["db-c", "gpu-a"]),  # exists, even with an empty value
    ("!gpu", ["bare", "dotted", "web-a", "web-b"]),
    ("gpu,app=ml", ["gpu-a"]),
    ("app in (web,db),!canary", ["db-c", "web-a"]),
    ("tier=db,env notin (c)", ["web-b"]),
    ("app=nothing", []),
    ("missing!=x", ALL),
    ("example.com/tier=db", ["dotted"]),
    ("example.com/tier", ["dotted"]),
    ("app in (web_2,ml)", ["dotted", "gpu-a"]),
    ("ver=1.2-rc", ["dotted"]),
    ("tier=db", ["db-c", "web-b"]),
]


@pytest.mark.parametrize("selector,want", SELECTORS, ids=[s or "<empty>" for s, _ in SELECTORS])
def test_label_selector(cache, selector, want):
    assert names(cache.list_pods(selector)) == want
    assert names(cache.list_pods(label_selector=selector)) == want


def test_default_lists_everything(cache):
    assert names(cache.list_pods()) == ALL
    assert len(cache.list_pods()) == cache.pod_count()


def test_pod_filter(cache):
    on_node_2 = lambda p: p["spec"]["nodeName"] == "node-2"  # noqa: E731
    want = sorted(n for i, n in enumerate(ALL) if i % 2 == 1)
    assert want
    assert names(cache.list_pods(pod_filter=on_node_2)) == want
    assert names(cache.list_pods("app=web", pod_filter=on_node_2)) == [n for n in want if n.startswith("web")]
    assert names(cache.list_pods(pod_filter=lambda p: False)) == []


def test_lists_latest_versions(cache):
    current = ref.plain([p for p in cache.list_pods() if p["metadata"]["name"] == "db-c"][0])
    new = b.new_version(current, labels={"app": "db", "env": "moved"})
    cache.update_pod(current, new)
    assert names(cache.list_pods("env=moved")) == ["db-c"]
    assert names(cache.list_pods("env=c")) == []


def test_removed_and_expired_pods_are_not_listed(cache):
    web_a = ref.plain([p for p in cache.list_pods() if p["metadata"]["name"] == "web-a"][0])
    web_b = ref.plain([p for p in cache.list_pods() if p["metadata"]["name"] == "web-b"][0])
    cache.remove_pod(web_a)
    cache.finish_binding(web_b, now=0.0)
    cache.cleanup_assumed_pods(now=100.0)
    assert names(cache.list_pods("app=web")) == []


MALFORMED = [
    "env in (a,b",
    "env in a,b",
    "=web",
    "app=web,",
    ",app=web",
    "app=web,,tier=db",
    "env notin",
    "app in ()",
    "app=we b",
    "!",
    "app!",
    "(app)",
]


@pytest.mark.parametrize("selector", MALFORMED)
def test_malformed_selector_raises_value_error(cache, selector):
    with pytest.raises(ValueError):
        cache.list_pods(selector)
