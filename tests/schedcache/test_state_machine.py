"""Pod state machine of the cache: every transition and every refusal, table driven.

States (the scheduler cache's): Initial, Assumed, Added, Expired, Deleted. Only Assumed and
Added pods exist in the cache; `pod_state` answers None for the other three.
"""

import time

import pytest

from schedcache import Cache, CacheCorruptedError, CacheError

import tests.schedcache.builders as b
import tests.schedcache.reference as ref

N1, N2 = "node-1", "node-2"
TTL = 30.0
T0 = 1_700_000_000.0  # a realistic epoch time; every call gets `now` explicitly

_BASE = b.pod("p", N1, cpu="100m", memory="500", ports=[b.port(80, "127.0.0.1", "TCP")])
PODS = {
    "p@n1": _BASE,
    "p@n2": b.on_node(_BASE, N2),
    "p@none": b.on_node(_BASE, None),
    "p@n1v2": b.new_version(_BASE, cpu="200m", labels={"v": "2"}),
    "p@n1v3": b.new_version(b.new_version(_BASE, cpu="300m"), labels={"v": "3"}),
    "p@n2v2": b.on_node(b.new_version(_BASE, cpu="200m"), N2),
    "q@n1": b.pod("q", N1, cpu="1", memory="1Gi"),
}
NODES = {N1: b.node(N1, cpu="4", memory="8Gi"), N2: b.node(N2, cpu="4", memory="8Gi")}


def run(cache, ops):
    """Apply a list of operations; each op is a tuple naming a cache call."""
    result = None
    for op in ops:
        kind, args = op[0], op[1:]
        if kind == "assume":
            result = cache.assume_pod(PODS[args[0]])
        elif kind == "finish":
            result = cache.finish_binding(PODS[args[0]], now=T0 + args[1])
        elif kind == "add":
            result = cache.add_pod(PODS[args[0]])
        elif kind == "update":
            result = cache.update_pod(PODS[args[0]], PODS[args[1]])
        elif kind == "remove":
            result = cache.remove_pod(PODS[args[0]])
        elif kind == "forget":
            result = cache.forget_pod(PODS[args[0]])
        elif kind == "cleanup":
            result = cache.cleanup_assumed_pods(now=T0 + args[0])
        elif kind == "add_node":
            result = cache.add_node(NODES[args[0]])
        elif kind == "remove_node":
            result = cache.remove_node(NODES[args[0]])
        else:  # pragma: no cover - table typo
            raise AssertionError(kind)
    return result


def check(cache, state, version, placement, nodes=()):
    """state: expected pod_state of p; version: which PODS entry get_pod returns;
    placement: {node name: [PODS keys]} for every NodeInfo that must exist;
    nodes: node names whose node object was added (and not removed)."""
    p = PODS["p@n1"]
    assert cache.pod_state(p) == state
    assert cache.is_assumed_pod(p) == (state == "Assumed")
    if version is None:
        with pytest.raises(CacheError):
            cache.get_pod(p)
    else:
        assert ref.plain(cache.get_pod(p)) == PODS[version]
    d = cache.dump()
    assert set(d.nodes) == set(placement)
    present = [NODES[n] for n in nodes]
    for name, keys in placement.items():
        node_obj = NODES[name] if name in nodes else None
        want = ref.expected_info(node_obj, [PODS[k] for k in keys], present)
        assert ref.without(ref.info_view(d.nodes[name]), "generation") == want, name
    assert cache.pod_count() == sum(len(v) for v in placement.values())
    assumed = {"uid-default-p"} if state == "Assumed" else set()
    assert set(d.assumed_pods) == assumed


TRANSITIONS = [
    # id, operations, state of p, version get_pod returns, {node: pods}
    ("initial-assume->assumed", [("assume", "p@n1")], "Assumed", "p@n1", {N1: ["p@n1"]}),
    ("assumed-add->added(confirm)", [("assume", "p@n1"), ("add", "p@n1")], "Added", "p@n1", {N1: ["p@n1"]}),
    (
        "assumed-add newer version->added, new version replaces assumed one",
        [("assume", "p@n1"), ("add", "p@n1v2")],
        "Added",
        "p@n1v2",
        {N1: ["p@n1v2"]},
    ),
    (
        "assumed-add on another node->added there, gone from assumed node",
        [("assume", "p@n1"), ("add", "p@n2")],
        "Added",
        "p@n2",
        {N2: ["p@n2"]},
    ),
    ("initial-add->added", [("add", "p@n1")], "Added", "p@n1", {N1: ["p@n1"]}),
    ("added-update->added", [("add", "p@n1"), ("update", "p@n1", "p@n1v2")], "Added", "p@n1v2", {N1: ["p@n1v2"]}),
    (
        "added-update twice->added",
        [("add", "p@n1"), ("update", "p@n1", "p@n1v2"), ("update", "p@n1v2", "p@n1v3")],
        "Added",
        "p@n1v3",
        {N1: ["p@n1v3"]},
    ),
    ("added-remove->deleted", [("add", "p@n1"), ("remove", "p@n1")], None, None, {}),
    ("assumed-remove->deleted", [("assume", "p@n1"), ("remove", "p@n1")], None, None, {}),
    (
        "remove with empty nodeName (missed delete) is fine",
        [("add", "p@n1"), ("remove", "p@none")],
        None,
        None,
        {},
    ),
    (
        "remove with empty nodeName of an assumed pod is fine",
        [("assume", "p@n1"), ("remove", "p@none")],
        None,
        None,
        {},
    ),
    ("assumed-forget->initial", [("assume", "p@n1"), ("forget", "p@n1")], None, None, {}),
    (
        "forgotten pod can be assumed again",
        [("assume", "p@n1"), ("forget", "p@n1"), ("assume", "p@n2")],
        "Assumed",
        "p@n2",
        {N2: ["p@n2"]},
    ),
    (
        "assumed-expire->expired",
        [("assume", "p@n1"), ("finish", "p@n1", 0), ("cleanup", TTL + 1)],
        None,
        None,
        {},
    ),
    (
        "expired-add->added",
        [("assume", "p@n1"), ("finish", "p@n1", 0), ("cleanup", TTL + 1), ("add", "p@n1")],
        "Added",
        "p@n1",
        {N1: ["p@n1"]},
    ),
    (
        "expired-add on another node->added there",
        [("assume", "p@n1"), ("finish", "p@n1", 0), ("cleanup", TTL + 1), ("add", "p@n2")],
        "Added",
        "p@n2",
        {N2: ["p@n2"]},
    ),
    (
        "expired-add-update->added",
        [
            ("assume", "p@n1"),
            ("finish", "p@n1", 0),
            ("cleanup", TTL + 1),
            ("add", "p@n1"),
            ("update", "p@n1", "p@n1v2"),
        ],
        "Added",
        "p@n1v2",
        {N1: ["p@n1v2"]},
    ),
    (
        "deleted pod can be added again",
        [("add", "p@n1"), ("remove", "p@n1"), ("add", "p@n1v2")],
        "Added",
        "p@n1v2",
        {N1: ["p@n1v2"]},
    ),
    (
        "confirmed pod does not expire",
        [("assume", "p@n1"), ("finish", "p@n1", 0), ("add", "p@n1"), ("cleanup", 10 * TTL)],
        "Added",
        "p@n1",
        {N1: ["p@n1"]},
    ),
    (
        "finish_binding of an added pod starts no clock",
        [("add", "p@n1"), ("finish", "p@n1", 0), ("cleanup", 10 * TTL)],
        "Added",
        "p@n1",
        {N1: ["p@n1"]},
    ),
    (
        "finish_binding twice: the later call sets the deadline",
        [("assume", "p@n1"), ("finish", "p@n1", 0), ("finish", "p@n1", 2 * TTL), ("cleanup", 2 * TTL + 1)],
        "Assumed",
        "p@n1",
        {N1: ["p@n1"]},
    ),
    (
        "forget of a pod not in the cache is a no-op",
        [("forget", "p@n1")],
        None,
        None,
        {},
    ),
    (
        "forget after forget is a no-op (retries are safe)",
        [("assume", "p@n1"), ("forget", "p@n1"), ("forget", "p@n1")],
        None,
        None,
        {},
    ),
    (
        "other pods are untouched by p's transitions",
        [("add", "q@n1"), ("assume", "p@n1"), ("forget", "p@n1")],
        None,
        None,
        {N1: ["q@n1"]},
    ),
]


@pytest.mark.parametrize("ops,state,version,placement", [t[1:] for t in TRANSITIONS], ids=[t[0] for t in TRANSITIONS])
def test_transition(ops, state, version, placement):
    cache = Cache(ttl=TTL)
    run(cache, ops)
    check(cache, state, version, placement)


@pytest.mark.parametrize("ops,state,version,placement", [t[1:] for t in TRANSITIONS], ids=[t[0] for t in TRANSITIONS])
def test_transition_with_nodes_present(ops, state, version, placement):
    """The same transitions when both nodes exist: NodeInfos then always exist."""
    cache = Cache(ttl=TTL)
    run(cache, [("add_node", N1), ("add_node", N2)])
    run(cache, ops)
    full = {N1: [], N2: []}
    full.update(placement)
    check(cache, state, version, full, nodes=(N1, N2))


REFUSALS = [
    # id, setup, refused operation, error class
    ("assume twice", [("assume", "p@n1")], ("assume", "p@n1"), CacheError),
    ("assume an assumed pod on another node", [("assume", "p@n1")], ("assume", "p@n2"), CacheError),
    ("assume an added pod", [("add", "p@n1")], ("assume", "p@n1"), CacheError),
    ("add an added pod", [("add", "p@n1")], ("add", "p@n1"), CacheError),
    ("add an added pod again after update", [("add", "p@n1"), ("update", "p@n1", "p@n1v2")], ("add", "p@n1v2"), CacheError),
    ("forget an added pod", [("add", "p@n1")], ("forget", "p@n1"), CacheError),
    ("forget an assumed pod on another node", [("assume", "p@n1")], ("forget", "p@n2"), CacheError),
    ("update a pod never added", [], ("update", "p@n1", "p@n1v2"), CacheError),
    ("update an assumed pod", [("assume", "p@n1")], ("update", "p@n1", "p@n1v2"), CacheError),
    ("update an expired pod", [("assume", "p@n1"), ("finish", "p@n1", 0), ("cleanup", TTL + 1)], ("update", "p@n1", "p@n1v2"), CacheError),
    ("update a deleted pod", [("add", "p@n1"), ("remove", "p@n1")], ("update", "p@n1", "p@n1v2"), CacheError),
    ("update onto another node", [("add", "p@n1")], ("update", "p@n1", "p@n2v2"), CacheCorruptedError),
    ("remove a pod never added", [], ("remove", "p@n1"), CacheError),
    ("remove twice", [("add", "p@n1"), ("remove", "p@n1")], ("remove", "p@n1"), CacheError),
    ("remove a forgotten pod", [("assume", "p@n1"), ("forget", "p@n1")], ("remove", "p@n1"), CacheError),
    ("remove an expired pod", [("assume", "p@n1"), ("finish", "p@n1", 0), ("cleanup", TTL + 1)], ("remove", "p@n1"), CacheError),
    ("remove an added pod naming another node", [("add", "p@n1")], ("remove", "p@n2"), CacheCorruptedError),
    ("remove an assumed pod naming another node", [("assume", "p@n1")], ("remove", "p@n2"), CacheCorruptedError),
    ("remove an unknown node", [], ("remove_node", N1), CacheError),
    ("remove a node twice", [("add_node", N1), ("remove_node", N1)], ("remove_node", N1), CacheError),
    (
        "remove a node twice while its pods remain",
        [("add_node", N1), ("add", "p@n1"), ("remove_node", N1)],
        ("remove_node", N1),
        CacheError,
    ),
]


@pytest.mark.parametrize("setup,op,exc", [t[1:] for t in REFUSALS], ids=[t[0] for t in REFUSALS])
def test_refusal_leaves_cache_unchanged(setup, op, exc):
    cache = Cache(ttl=TTL)
    run(cache, [("add", "q@n1")] + setup)
    ref.assert_refused(cache, lambda: run(cache, [op]), exc, probe_pods=[PODS["p@n1"], PODS["q@n1"]])


@pytest.mark.parametrize("setup,op,exc", [t[1:] for t in REFUSALS if t[3] is CacheCorruptedError], ids=[t[0] for t in REFUSALS if t[3] is CacheCorruptedError])
def test_cache_stays_usable_after_corruption_error(setup, op, exc):
    cache = Cache(ttl=TTL)
    run(cache, setup)
    with pytest.raises(CacheCorruptedError):
        run(cache, [op])
    # the pod can still be removed through its real node, and the cache is empty after
    run(cache, [("remove", "p@n1")])
    assert cache.pod_count() == 0
    assert cache.pod_state(PODS["p@n1"]) is None


def test_corrupted_error_is_a_cache_error():
    assert issubclass(CacheCorruptedError, CacheError)
    assert issubclass(CacheError, Exception)


def test_refusals_raise_cache_error_not_corruption():
    """Plain refusals are CacheError but not the fatal-corruption subclass."""
    for name, setup, op, exc in REFUSALS:
        if exc is not CacheError:
            continue
        cache = Cache(ttl=TTL)
        run(cache, setup)
        try:
            run(cache, [op])
        except CacheCorruptedError:  # pragma: no cover - the failure we look for
            pytest.fail("%s raised CacheCorruptedError" % name)
        except CacheError:
            pass
        else:  # pragma: no cover
            pytest.fail("%s did not raise" % name)


@pytest.mark.parametrize("call", ["assume_pod", "add_pod", "remove_pod", "forget_pod", "get_pod"])
def test_pod_without_uid_is_rejected(call):
    cache = Cache(ttl=TTL)
    cache.add_pod(PODS["q@n1"])
    nouid = b.pod("nouid", N1, cpu="1", no_uid=True)
    ref.assert_refused(cache, lambda: getattr(cache, call)(nouid), CacheError, probe_pods=[PODS["q@n1"]])


def test_update_pod_without_uid_is_rejected():
    cache = Cache(ttl=TTL)
    nouid = b.pod("nouid", N1, cpu="1", no_uid=True)
    ref.assert_refused(cache, lambda: cache.update_pod(nouid, nouid), CacheError)


def test_get_pod_of_unknown_pod_raises():
    cache = Cache(ttl=TTL)
    with pytest.raises(CacheError):
        cache.get_pod(PODS["p@n1"])


def test_cache_key_is_the_uid_not_the_name():
    """Two pods with the same namespace/name but different uids are two cache entries;
    the same uid under another name is the same entry."""
    cache = Cache(ttl=TTL)
    a = b.pod("same", N1, uid="uid-a", cpu="100m")
    c = b.pod("same", N1, uid="uid-c", cpu="100m")
    cache.add_pod(a)
    cache.add_pod(c)
    assert cache.pod_count() == 2
    renamed = b.pod("other-name", N1, uid="uid-a", cpu="100m")
    with pytest.raises(CacheError):
        cache.add_pod(renamed)
    assert cache.pod_state(renamed) == "Added"


def test_get_pod_returns_latest_state():
    cache = Cache(ttl=TTL)
    run(cache, [("add", "p@n1"), ("update", "p@n1", "p@n1v2")])
    assert ref.plain(cache.get_pod(PODS["p@n1"])) == PODS["p@n1v2"]
    # looked up by key: any version of the pod finds it
    assert ref.plain(cache.get_pod(PODS["p@n1v3"])) == PODS["p@n1v2"]


# ------------------------------------------------------------------- expiry

EXPIRY = [
    # id, ttl, [(pod key, finish offset or None)], cleanup offset, expired keys, still assumed
    ("assumed pod would expire", 10.0, [("a", 0)], 20, {"a"}, set()),
    ("first expires, second and third would not", 10.0, [("a", 0), ("b", 15), ("c", None)], 20, {"a"}, {"b", "c"}),
    ("binding unfinished never expires", 10.0, [("a", None)], 10_000_000, set(), {"a"}),
    ("ttl 0: never expires", 0.0, [("a", 0)], 10_000_000, set(), {"a"}),
    ("deadline equal to now: not yet expired", 10.0, [("a", 0)], 10, set(), {"a"}),
    ("just after the deadline: expired", 10.0, [("a", 0)], 10.001, {"a"}, set()),
    ("before the deadline: kept", 10.0, [("a", 5)], 14.9, set(), {"a"}),
]


def _expiry_pods():
    return {k: b.pod(k, N1, cpu="100m", memory="1Mi", ports=[b.port(9000 + i)]) for i, k in enumerate("abc")}


@pytest.mark.parametrize("ttl,plan,cleanup_at,expired,kept", [e[1:] for e in EXPIRY], ids=[e[0] for e in EXPIRY])
def test_expiry(ttl, plan, cleanup_at, expired, kept):
    pods = _expiry_pods()
    cache = Cache(ttl=ttl)
    cache.add_node(NODES[N1])
    for key, finish in plan:
        cache.assume_pod(pods[key])
        if finish is not None:
            cache.finish_binding(pods[key], now=T0 + finish)
    got = cache.cleanup_assumed_pods(now=T0 + cleanup_at)
    assert set(got) == {ref.uid(pods[k]) for k in expired}
    assert len(list(got)) == len(expired)
    for key, _ in plan:
        want = "Assumed" if key in kept else None
        assert cache.pod_state(pods[key]) == want, key
    d = cache.dump()
    assert set(d.assumed_pods) == {ref.uid(pods[k]) for k in kept}
    want = ref.expected_info(NODES[N1], [pods[k] for k in sorted(kept)], [NODES[N1]])
    assert ref.without(ref.info_view(d.nodes[N1]), "generation") == want
    # a second cleanup at the same time expires nothing more
    assert set(cache.cleanup_assumed_pods(now=T0 + cleanup_at)) == set()


def test_expired_pod_on_unknown_node_leaves_no_nodeinfo():
    cache = Cache(ttl=10.0)
    p = PODS["p@n1"]
    cache.assume_pod(p)
    cache.finish_binding(p, now=T0)
    assert set(cache.dump().nodes) == {N1}
    cache.cleanup_assumed_pods(now=T0 + 11)
    assert set(cache.dump().nodes) == set()
    assert cache.node_count() == 0
    assert cache.pod_count() == 0


def test_finish_binding_restarts_the_clock_from_the_given_now():
    cache = Cache(ttl=10.0)
    p = PODS["p@n1"]
    cache.assume_pod(p)
    cache.finish_binding(p, now=T0 + 100)
    assert set(cache.cleanup_assumed_pods(now=T0 + 105)) == set()
    assert set(cache.cleanup_assumed_pods(now=T0 + 109.5)) == set()
    assert set(cache.cleanup_assumed_pods(now=T0 + 110.5)) == {ref.uid(p)}


def test_finish_binding_default_now_is_the_current_time():
    """No sleeping: the deadline must lie between (before + ttl) and (after + ttl)."""
    cache = Cache(ttl=30.0)
    p = PODS["p@n1"]
    cache.assume_pod(p)
    before = time.time()
    cache.finish_binding(p)
    after = time.time()
    assert set(cache.cleanup_assumed_pods(now=before + 30.0 - 1.0)) == set()
    assert cache.is_assumed_pod(p)
    assert set(cache.cleanup_assumed_pods(now=after + 30.0 + 1.0)) == {ref.uid(p)}


def test_cleanup_default_now_does_not_expire_a_fresh_pod():
    cache = Cache(ttl=30.0)
    p = PODS["p@n1"]
    cache.assume_pod(p)
    cache.finish_binding(p, now=time.time())
    assert set(cache.cleanup_assumed_pods(time.time())) == set()
    assert cache.is_assumed_pod(p)


def test_cleanup_without_finished_binding_far_in_the_future():
    """An assumed pod never expires before its binding finished, whatever `now` is."""
    cache = Cache(ttl=1.0)
    p = PODS["p@n1"]
    cache.assume_pod(p)
    for now in (T0, T0 + 1e6, T0 + 1e9):
        assert set(cache.cleanup_assumed_pods(now=now)) == set()
    assert cache.pod_state(p) == "Assumed"
    cache.finish_binding(p, now=T0 + 1e9)
    assert set(cache.cleanup_assumed_pods(now=T0 + 1e9 + 0.5)) == set()
    assert set(cache.cleanup_assumed_pods(now=T0 + 1e9 + 1.5)) == {ref.uid(p)}


def test_cleanup_only_removes_expired_pod_resources():
    cache = Cache(ttl=10.0)
    cache.add_node(NODES[N1])
    added = PODS["q@n1"]
    p = PODS["p@n1"]
    cache.add_pod(added)
    cache.assume_pod(p)
    cache.finish_binding(p, now=T0)
    cache.cleanup_assumed_pods(now=T0 + 11)
    d = cache.dump()
    want = ref.expected_info(NODES[N1], [added], [NODES[N1]])
    assert ref.without(ref.info_view(d.nodes[N1]), "generation") == want


# ---------------------------------------------------- assume_pod_if_bind_succeeds


def test_assume_if_bind_succeeds_true():
    cache = Cache(ttl=TTL)
    calls = []
    p = PODS["p@n1"]

    def bind():
        calls.append(1)
        return True

    cache.assume_pod_if_bind_succeeds(p, bind)
    assert calls == [1]
    assert cache.pod_state(p) == "Assumed"
    assert cache.is_assumed_pod(p)
    check(cache, "Assumed", "p@n1", {N1: ["p@n1"]})


def test_assume_if_bind_fails_leaves_cache_unchanged():
    cache = Cache(ttl=TTL)
    cache.add_pod(PODS["q@n1"])
    p = PODS["p@n1"]
    before = ref.dump_view(cache, [p, PODS["q@n1"]])
    calls = []

    def bind():
        calls.append(1)
        return False

    cache.assume_pod_if_bind_succeeds(p, bind)
    assert calls == [1]
    assert ref.dump_view(cache, [p, PODS["q@n1"]]) == before
    assert cache.pod_state(p) is None


def test_assume_if_bind_succeeds_refuses_a_pod_already_in_the_cache():
    cache = Cache(ttl=TTL)
    p = PODS["p@n1"]
    cache.add_pod(p)
    ref.assert_refused(cache, lambda: cache.assume_pod_if_bind_succeeds(p, lambda: True), CacheError, [p])


def test_assumed_via_bind_can_be_confirmed():
    cache = Cache(ttl=TTL)
    p = PODS["p@n1"]
    cache.assume_pod_if_bind_succeeds(p, lambda: True)
    cache.add_pod(PODS["p@n1v2"])
    check(cache, "Added", "p@n1v2", {N1: ["p@n1v2"]})
