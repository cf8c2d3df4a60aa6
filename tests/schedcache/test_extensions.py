"""Two things the project adds beyond the contract's fixed names:

1. cache.expire_pod(pod, now=None): an operator's "expire now" on an assumed pod; it
   leaves the cache like an expiry; CacheError if the pod is not assumed.
2. events: cache.subscribe(callback) -> unsubscribe(); the callback gets, synchronously,
   one event per transition with seq / kind / key / node / from_state / to_state /
   generation; a refused operation emits nothing.

The names are constants below so that adjusting them is a one-line change.
"""

import threading

import pytest

from schedcache import Cache, CacheError, Snapshot

import tests.schedcache.builders as b
import tests.schedcache.reference as ref

# -------------------------------------------------------------- names in use
EXPIRE_POD = "expire_pod"
SUBSCRIBE = "subscribe"

SEQ, KIND, KEY, NODE, FROM, TO, GENERATION = "seq", "kind", "key", "node", "from_state", "to_state", "generation"

POD_ASSUMED = "pod_assumed"
POD_CONFIRMED = "pod_confirmed"  # Assumed -> Added
POD_ADDED = "pod_added"  # Initial/Expired -> Added
POD_UPDATED = "pod_updated"
POD_FORGOTTEN = "pod_forgotten"
POD_EXPIRED = "pod_expired"
POD_REMOVED = "pod_removed"
NODE_ADDED = "node_added"
NODE_UPDATED = "node_updated"
NODE_REMOVED = "node_removed"
POD_KINDS = {POD_ASSUMED, POD_CONFIRMED, POD_ADDED, POD_UPDATED, POD_FORGOTTEN, POD_EXPIRED, POD_REMOVED}
NODE_KINDS = {NODE_ADDED, NODE_UPDATED, NODE_REMOVED}

INITIAL, ASSUMED, ADDED, EXPIRED, DELETED = "Initial", "Assumed", "Added", "Expired", "Deleted"
# ---------------------------------------------------------------------------

N1, N2 = "node-1", "node-2"
T0 = 1_700_000_000.0
TTL = 30.0


def expire_pod(cache, pod, **kw):
    return getattr(cache, EXPIRE_POD)(pod, **kw)


def subscribe(cache, callback):
    return getattr(cache, SUBSCRIBE)(callback)


def fields(e):
    return {k: getattr(e, k) for k in (SEQ, KIND, KEY, NODE, FROM, TO, GENERATION)}


def short(e):
    """(kind, key, node, from, to) of an event; from/to are None for node events."""
    f = fields(e)
    if f[KIND] in NODE_KINDS:
        return (f[KIND], f[KEY], f[NODE])
    return (f[KIND], f[KEY], f[NODE], f[FROM], f[TO])


class Recorder:
    def __init__(self, cache):
        self.events = []
        self.unsubscribe = subscribe(cache, self.events.append)

    def take(self):
        out, self.events[:] = list(self.events), []
        return out


@pytest.fixture
def cache():
    return Cache(ttl=TTL)


P = b.pod("p", N1, cpu="100m", memory="1Mi", ports=[b.port(80)])
UID = ref.uid(P)


# ---------------------------------------------------------------- expire_pod


def test_expire_pod_leaves_the_cache_like_an_expiry(cache):
    cache.add_node(b.node(N1, cpu="1"))
    q = b.pod("q", N1, cpu="200m")
    cache.add_pod(q)
    twin = Cache(ttl=TTL)
    twin.add_node(b.node(N1, cpu="1"))
    twin.add_pod(q)
    for c in (cache, twin):
        c.assume_pod(P)
        c.finish_binding(P, now=T0)
    expire_pod(cache, P, now=T0 + 1)
    assert set(twin.cleanup_assumed_pods(now=T0 + TTL + 1)) == {UID}
    assert cache.pod_state(P) is None
    assert not cache.is_assumed_pod(P)
    mine = ref.dump_view(cache, [P, q])
    theirs = ref.dump_view(twin, [P, q])
    for view in (mine, theirs):
        for n in view["nodes"].values():
            n.pop("generation")
    assert mine == theirs
    # and, like an expired pod, it can be added back
    cache.add_pod(P)
    assert cache.pod_state(P) == "Added"


def test_expire_pod_default_now(cache):
    cache.assume_pod(P)
    cache.finish_binding(P, now=T0)
    expire_pod(cache, P)
    assert cache.pod_state(P) is None
    assert cache.pod_count() == 0
    assert N1 not in cache.dump().nodes


def test_expire_pod_before_binding_finished(cache):
    """An operator's "expire now" acts on any assumed pod (the brief: CacheError only if
    the pod is not assumed), even one whose binding has not finished."""
    cache.assume_pod(P)
    expire_pod(cache, P, now=T0)
    assert cache.pod_state(P) is None


@pytest.mark.parametrize("setup", ["unknown", "added", "forgotten", "expired", "removed"])
def test_expire_pod_refuses_a_pod_that_is_not_assumed(cache, setup):
    q = b.pod("q", N1, cpu="1")
    cache.add_pod(q)
    if setup == "added":
        cache.add_pod(P)
    elif setup == "forgotten":
        cache.assume_pod(P)
        cache.forget_pod(P)
    elif setup == "expired":
        cache.assume_pod(P)
        cache.finish_binding(P, now=T0)
        cache.cleanup_assumed_pods(now=T0 + TTL + 1)
    elif setup == "removed":
        cache.add_pod(P)
        cache.remove_pod(P)
    rec = Recorder(cache)
    ref.assert_refused(cache, lambda: expire_pod(cache, P, now=T0), CacheError, [P, q])
    assert rec.take() == []


# -------------------------------------------------------------------- events


def test_subscribe_returns_an_unsubscribe_function(cache):
    rec = Recorder(cache)
    assert callable(rec.unsubscribe)
    cache.add_node(b.node(N1))
    assert len(rec.events) == 1  # synchronous: delivered before the call returned
    rec.unsubscribe()
    cache.add_node(b.node(N2))
    cache.add_pod(P)
    assert len(rec.events) == 1


def test_every_transition_emits_one_event(cache):
    rec = Recorder(cache)
    n1 = b.node(N1, cpu="1")
    n1b = b.node(N1, cpu="2", resource_version="2")
    q = b.pod("q", N1, cpu="1")
    r = b.pod("r", N1, cpu="1")
    s = b.pod("s", N1, cpu="1")
    steps = [
        (lambda: cache.add_node(n1), [(NODE_ADDED, N1, N1)]),
        (lambda: cache.update_node(n1, n1b), [(NODE_UPDATED, N1, N1)]),
        (lambda: cache.assume_pod(P), [(POD_ASSUMED, UID, N1, INITIAL, ASSUMED)]),
        (lambda: cache.add_pod(b.on_node(P, N2)), [(POD_CONFIRMED, UID, N2, ASSUMED, ADDED)]),
        (lambda: cache.update_pod(b.on_node(P, N2), b.new_version(b.on_node(P, N2))), [(POD_UPDATED, UID, N2, ADDED, ADDED)]),
        (lambda: cache.remove_pod(b.on_node(P, N2)), [(POD_REMOVED, UID, N2, ADDED, DELETED)]),
        (lambda: cache.add_pod(q), [(POD_ADDED, ref.uid(q), N1, INITIAL, ADDED)]),
        (lambda: cache.assume_pod(r), [(POD_ASSUMED, ref.uid(r), N1, INITIAL, ASSUMED)]),
        (lambda: cache.forget_pod(r), [(POD_FORGOTTEN, ref.uid(r), N1, ASSUMED, INITIAL)]),
        (lambda: cache.assume_pod(s), [(POD_ASSUMED, ref.uid(s), N1, INITIAL, ASSUMED)]),
        (lambda: cache.remove_pod(s), [(POD_REMOVED, ref.uid(s), N1, ASSUMED, DELETED)]),
        (lambda: cache.remove_node(n1b), [(NODE_REMOVED, N1, N1)]),
        (lambda: cache.remove_pod(q), [(POD_REMOVED, ref.uid(q), N1, ADDED, DELETED)]),
    ]
    for call, want in steps:
        call()
        assert [short(e) for e in rec.take()] == want


def test_expiry_events(cache):
    rec = Recorder(cache)
    q = b.pod("q", N2, cpu="1")
    cache.assume_pod(P)
    cache.assume_pod(q)
    cache.finish_binding(P, now=T0)
    cache.finish_binding(q, now=T0)
    rec.take()
    cache.cleanup_assumed_pods(now=T0 + 1)
    assert rec.take() == []  # nothing expired, nothing said
    cache.cleanup_assumed_pods(now=T0 + TTL + 1)
    got = sorted(short(e) for e in rec.take())
    assert got == sorted([(POD_EXPIRED, UID, N1, ASSUMED, EXPIRED), (POD_EXPIRED, ref.uid(q), N2, ASSUMED, EXPIRED)])
    cache.add_pod(P)
    (e,) = rec.take()
    assert fields(e)[KIND] == POD_ADDED
    assert fields(e)[TO] == ADDED
    assert fields(e)[FROM] in (EXPIRED, INITIAL)


def test_expire_pod_emits_pod_expired(cache):
    rec = Recorder(cache)
    cache.assume_pod(P)
    cache.finish_binding(P, now=T0)
    rec.take()
    expire_pod(cache, P, now=T0)
    assert [short(e) for e in rec.take()] == [(POD_EXPIRED, UID, N1, ASSUMED, EXPIRED)]


def test_seq_grows_by_one_per_event_cache_wide(cache):
    a, c2 = Recorder(cache), Recorder(cache)
    cache.add_node(b.node(N1))
    cache.assume_pod(P)
    cache.add_pod(P)
    late = Recorder(cache)
    cache.add_pod(b.pod("q", N2))
    cache.remove_pod(P)
    seqs = [fields(e)[SEQ] for e in a.events]
    assert all(isinstance(s, int) for s in seqs)
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert [fields(e) for e in c2.events] == [fields(e) for e in a.events]
    assert [fields(e)[SEQ] for e in late.events] == seqs[-2:]
    nxt = Recorder(cache)
    cache.add_node(b.node(N2))
    assert fields(nxt.events[0])[SEQ] == seqs[-1] + 1


def test_refused_operations_emit_nothing(cache):
    cache.add_node(b.node(N1))
    cache.add_pod(P)
    cache.assume_pod(b.pod("a", N1))
    rec = Recorder(cache)
    refused = [
        lambda: cache.add_pod(P),
        lambda: cache.assume_pod(P),
        lambda: cache.forget_pod(P),
        lambda: cache.update_pod(b.pod("a", N1), b.new_version(b.pod("a", N1))),
        lambda: cache.update_pod(P, b.on_node(P, N2)),
        lambda: cache.remove_pod(b.on_node(P, N2)),
        lambda: cache.remove_pod(b.pod("nope", N1)),
        lambda: cache.remove_node(b.node("nope")),
        lambda: cache.add_pod(b.pod("x", N1, no_uid=True)),
    ]
    for call in refused:
        with pytest.raises(CacheError):
            call()
    cache.forget_pod(b.pod("never", N1))  # a no-op is not a transition
    cache.cleanup_assumed_pods(now=T0)
    cache.update_node_name_to_info_map({})
    cache.get_node_name_to_info_map()
    cache.dump()
    cache.list_pods()
    assert [fields(e)[KIND] for e in rec.events if fields(e)[KIND] in POD_KINDS | NODE_KINDS] == []


def test_event_generation_is_the_cache_generation_after_the_change(cache):
    rec = Recorder(cache)
    steps = [
        lambda: cache.add_node(b.node(N1)),
        lambda: cache.add_node(b.node(N2)),
        lambda: cache.assume_pod(P),
        lambda: cache.add_pod(P),
        lambda: cache.update_pod(P, b.new_version(P)),
        lambda: cache.add_pod(b.pod("q", N2)),
    ]
    last = 0
    for step in steps:
        step()
        (e,) = rec.take()
        gens = [ni.generation for ni in cache.dump().nodes.values()]
        f = fields(e)
        assert f[GENERATION] == max(gens)
        assert f[GENERATION] > last
        last = f[GENERATION]
        node_gen = cache.dump().nodes[f[NODE]].generation
        assert f[GENERATION] == node_gen


def test_subscriber_sees_the_cache_after_the_change(cache):
    """Synchronous delivery: when the callback runs, the change is visible (and the
    callback can read the cache without deadlocking)."""
    seen = []

    def cb(e):
        seen.append((fields(e)[KIND], cache.pod_state(P)))

    subscribe(cache, cb)

    def run():
        cache.assume_pod(P)
        cache.add_pod(P)
        cache.remove_pod(P)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout=20)  # returns at once unless the callback deadlocked on the cache's lock
    assert not t.is_alive(), "a callback reading the cache deadlocked"
    assert seen == [(POD_ASSUMED, "Assumed"), (POD_CONFIRMED, "Added"), (POD_REMOVED, None)]


def test_snapshot_update_emits_no_pod_or_node_event(cache):
    cache.add_node(b.node(N1))
    rec = Recorder(cache)
    cache.update_snapshot(Snapshot())
    assert [fields(e)[KIND] for e in rec.events if fields(e)[KIND] in POD_KINDS | NODE_KINDS] == []
