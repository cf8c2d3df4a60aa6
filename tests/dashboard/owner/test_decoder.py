"""The decoder process: reflectors and the pods' digest in a child process, feeding the owner
over a pipe. Against the simulated cluster over real HTTP, with a real child process."""
import functools
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest
from kubernetes.client import ApiException

from schedcache import Cache
from schedcache.podinfo import make_pod_info, unpack_pod_info
from simcluster.generate import make_node, make_pod

from dashboard.kube.reflector import CLAIMS
from dashboard.owner.decoder import (
    DecodedEvents,
    DecodedFeed,
    DecodedList,
    DecodedPage,
    DecoderProcess,
    compared_pod,
    digest_pod,
)
from dashboard.owner import runner
from dashboard.owner.owner import CacheOwner
from tests.dashboard.feedhelpers import (
    WAIT,
    RecordingApi,
    core_api_at,
    item_form,
    make_sim,
    pod_body,
)
from tests.waiting import wait_for

pytestmark = pytest.mark.slow

BIND_INFO = "schedview.io/bind-info"


def uid(obj):
    return obj["metadata"]["uid"]


def bound(sim):
    return {uid(p) for p in sim.pods() if p["spec"].get("nodeName")}


def unbound(sim):
    return {uid(p) for p in sim.pods() if not p["spec"].get("nodeName")}


def apply_until(owner, predicate, what, timeout=WAIT):
    """Apply the owner's feed as it arrives until `predicate()` holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"timed out waiting for {what}")
        try:
            owner.apply(owner.feed.get(timeout=min(left, 0.1)))
        except queue.Empty:
            pass


@pytest.fixture
def decoded(sim):
    """An owner fed by a running decoder process on `sim`; stopped (and checked) at teardown."""
    started = []

    def start(owner=None, **kw):
        owner = owner or CacheOwner(Cache(ttl=30))
        kw.setdefault("options", {"watch_timeout": 60})
        decoder = DecoderProcess(owner.feed.put, functools.partial(core_api_at, sim.url),
                                 **kw).start()
        started.append(decoder)
        return owner, decoder
    yield start
    for decoder in started:
        decoder.stop()
        assert not decoder.process.is_alive()


def synced(owner, sim):
    apply_until(owner, lambda: all(owner.synced.values()) and owner.cache.node_count()
                and set(owner.cache.pod_keys()) == bound(sim), "the first lists")


@pytest.mark.parametrize("watch_list", [False, True], ids=["paged list", "watch-list"])
def test_the_owner_syncs_and_follows_the_cluster_through_the_decoder(sim, v1, decoded,
                                                                     watch_list):
    owner, decoder = decoded(options={"watch_timeout": 60, "watch_list": watch_list,
                                      "page_size": 7})
    synced(owner, sim)
    assert decoder.views["pods"].stats["watch_lists"] == int(watch_list)
    assert set(owner.pending) == unbound(sim)
    assert sorted(owner.cache.node_names()) == sorted(n["metadata"]["name"] for n in sim.nodes())
    one = next(p for p in sim.pods() if p["spec"].get("nodeName"))
    cached, direct = owner.cache.pod_info(uid(one)), make_pod_info(one)
    # (a watch's objects, the watch-list's included, carry kind and apiVersion)
    assert (cached.requested, cached.labels, item_form(cached.pod)) == \
        (direct.requested, direct.labels, direct.pod)

    meta = one["metadata"]
    v1.patch_namespaced_pod(meta["name"], meta["namespace"],
                            {"metadata": {"labels": {"seen": "yes"}}})
    apply_until(owner, lambda: owner.cache.pod_info(uid(one)).labels.get("seen") == "yes",
                "the label change")
    v1.delete_namespaced_pod(meta["name"], meta["namespace"], grace_period_seconds=0)
    apply_until(owner, lambda: owner.cache.pod_info(uid(one)) is None, "the deletion")
    pods = decoder.views["pods"]
    assert pods.wait_for(lambda v: v.resource_version == str(sim.resource_version), WAIT)
    assert pods.state == "watching" and pods.stats["events"] >= 2


def test_a_version_the_owner_is_told_of_has_its_events_queued(sim, v1, decoded):
    """runner.list_for_comparison waits for the views' version: it must never run ahead."""
    owner, decoder = decoded()
    synced(owner, sim)
    pods = decoder.views["pods"]
    for target in sorted(bound(sim))[:5]:
        pod = next(p for p in sim.pods() if uid(p) == target)["metadata"]
        rv = v1.patch_namespaced_pod(pod["name"], pod["namespace"],
                                     {"metadata": {"labels": {"n": "1"}}}).metadata.resource_version
        assert pods.wait_for(lambda v: int(v.resource_version or 0) >= int(rv), WAIT)
        queued = []
        while not owner.feed.empty():
            item = owner.feed.get_nowait()
            queued.append(item)
            owner.apply(item)
        assert any(type(i) is DecodedEvents and any(r[0] and r[0][0] == target and r[0][4] == rv
                                                    for _, r in i.events)
                   for feed in queued for i in feed.unpack())


def test_the_owners_queue_holds_the_feed_as_the_decoders_bytes(sim, v1, decoded):
    """Unpacked records are several times their bytes: what waits for the owner's thread
    stays marshalled until it is applied (issue 26), and applies to the cluster's state."""
    owner, decoder = decoded(options={"watch_timeout": 60, "page_size": 7})
    for view in decoder.reflectors:      # listed while the owner's thread applies nothing
        assert view.wait_for(lambda v: v.state == "watching", WAIT)
    meta = next(p for p in sim.pods() if p["spec"].get("nodeName"))["metadata"]
    patched = v1.patch_namespaced_pod(meta["name"], meta["namespace"],
                                      {"metadata": {"labels": {"seen": "yes"}}})
    rv = patched.metadata.resource_version
    assert decoder.views["pods"].wait_for(lambda v: int(v.resource_version) >= int(rv), WAIT)
    queued = []
    while not owner.feed.empty():
        queued.append(owner.feed.get_nowait())
    # How many messages the lists and the event came in is the decoder's timing (a quiet
    # machine ships a small cluster's lists in one): what is queued is bytes, all of it.
    assert queued and all(type(i) is DecodedFeed and type(i.entries) is bytes
                          for i in queued)
    for item in queued:
        owner.apply(item)
    assert all(owner.synced.values())
    assert set(owner.cache.pod_keys()) == bound(sim) and set(owner.pending) == unbound(sim)
    assert sorted(owner.cache.node_names()) == sorted(n["metadata"]["name"] for n in sim.nodes())
    assert owner.cache.pod_info(meta["uid"]).labels.get("seen") == "yes"


def test_the_comparers_lists_come_cut_down_and_compare_clean(sim, v1, decoded):
    from dashboard.owner.runner import list_for_comparison
    owner, decoder = decoded()
    synced(owner, sim)
    lists = decoder.list_for_comparison(WAIT)
    assert {p[0] for p in lists.pods} == bound(sim) | unbound(sim)
    one = next(p for p in sim.pods() if p["spec"].get("nodeName"))
    meta = one["metadata"]
    assert next(p for p in lists.pods if p[0] == uid(one)) == (
        uid(one), meta["resourceVersion"], one["spec"]["nodeName"], one["status"]["phase"],
        meta["namespace"], meta["name"])
    assert {n["metadata"]["name"] for n in lists.nodes} == {
        n["metadata"]["name"] for n in sim.nodes()}
    assert set(next(iter(lists.nodes))) == {"metadata", "status"}

    request = list_for_comparison(decoder, threading.Event())   # the owner's lister
    owner.apply(request)     # compared off the owner's thread: the outcome joins the feed
    wait_for(lambda: (owner.drain_feed(wait=0.05), owner.latest_report)[1], WAIT,
             "the comparison's outcome")
    assert owner.latest_report.clean, owner.latest_report.as_dict()
    # A pod bound behind the cache's back is drift the cut-down lists still show.
    meta = next(p for p in sim.pods() if not p["spec"].get("nodeName"))["metadata"]
    v1.create_namespaced_binding(meta["namespace"], {
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": meta["name"]},
        "target": {"apiVersion": "v1", "kind": "Node", "name": sim.nodes()[0]["metadata"]["name"]}},
        _preload_content=False)
    lists = decoder.list_for_comparison(WAIT)
    from schedcache.comparer import compare
    assert compare(owner.cache, lists.nodes,
                   map(compared_pod, lists.pods)).missed_pods == [meta["uid"]]


def test_the_comparers_lists_are_read_a_page_at_a_time(sim, monkeypatch):
    """A page is parsed whole before it is cut down, so the comparer's pages are small
    (pages of 5,000 pods left the decoder 300 MB larger after each comparison)."""
    from dashboard.owner import decoder as decoder_module
    monkeypatch.setattr(decoder_module, "COMPARISON_PAGE", 4)
    apis, taken = [], []

    def api_factory():
        apis.append(RecordingApi(sim.api_client()))
        return apis[-1]

    decoder_module._list_for_comparison(api_factory, taken.append, watch_list=False)
    (lists,) = taken
    assert not lists.error
    assert {p[0] for p in lists.pods} == bound(sim) | unbound(sim)
    pages = [call for api in apis for call in api.calls]
    assert len(pages) >= (len(lists.pods) + len(lists.nodes)) // 4
    assert {call["limit"] for call in pages} == {4}
    # kept as they came: a page of marshal bytes each (dashboard/owner/listed_pages.py)
    nodes_api, pods_api = apis
    assert (len(lists.nodes.pages), len(lists.pods.pages)) == (len(nodes_api.calls),
                                                               len(pods_api.calls))


class WatchListApi(RecordingApi):
    """Records the watch-lists asked for too; `refuse`: answers them HTTP 400, as an API
    server without the feature."""

    def __init__(self, api_client, refuse=False):
        super().__init__(api_client)
        self.watch_lists, self.refuse = 0, refuse

    def _record(self, method, kw):
        if kw.get("send_initial_events"):
            self.watch_lists += 1
            if self.refuse:
                raise ApiException(status=400, reason="Bad Request")
        return super()._record(method, kw)


def comparison_lists(sim, refuse: bool):
    """The decoder's comparison lists of the cluster, asked for through the watch, and the
    API clients that took them."""
    from dashboard.owner import decoder as decoder_module
    apis, taken = [], []

    def api_factory():
        apis.append(WatchListApi(sim.api_client(), refuse))
        return apis[-1]

    decoder_module._list_for_comparison(api_factory, taken.append, watch_list=True)
    (lists,) = taken
    assert not lists.error
    return lists, apis


def test_the_comparers_lists_come_through_the_watch_where_the_server_offers_it(sim):
    """Capture 58's watch-list: no list request, so no continue token to expire and no
    one-request list of everything after one did (issue 26: at 600,000 pods under churn
    the comparer's paged list outlived its token, and the whole list failed to parse)."""
    lists, apis = comparison_lists(sim, refuse=False)
    assert {p[0] for p in lists.pods} == bound(sim) | unbound(sim)
    assert {n["metadata"]["name"] for n in lists.nodes} == {
        n["metadata"]["name"] for n in sim.nodes()}
    assert [(api.watch_lists, api.calls) for api in apis] == [(1, []), (1, [])]
    assert int(lists.resource_version) >= max(int(p["metadata"]["resourceVersion"])
                                              for p in sim.pods())


def test_a_server_refusing_the_watch_list_gets_the_comparers_lists_in_pages(sim):
    lists, apis = comparison_lists(sim, refuse=True)
    assert {p[0] for p in lists.pods} == bound(sim) | unbound(sim)
    assert all(api.watch_lists == 1 and api.calls for api in apis)


def test_a_comparison_the_cluster_cannot_answer_fails_with_its_reason(sim, decoded):
    owner, decoder = decoded()
    synced(owner, sim)
    sim.kill()
    with pytest.raises(RuntimeError, match="MaxRetryError|ConnectionRefused|ProtocolError"):
        decoder.list_for_comparison(WAIT)


def test_a_relist_request_reaches_the_decoder(sim, decoded):
    owner, decoder = decoded()
    synced(owner, sim)
    lists = []
    owner.applier.on_pods_listed = lists.append
    decoder.views["pods"].request_relist()
    apply_until(owner, lambda: lists, "the second pod list")
    assert decoder.views["pods"].wait_for(lambda v: v.stats.get("lists") == 2, WAIT)


def test_drift_from_lost_events_is_fetched_again_without_a_relist(sim, v1, decoded):
    """Issue 26: each drift relisted every pod, which held the feed for minutes at 600,000
    pods; the drifted ones are fetched again instead (a GET each: captures 21, 60)."""
    owner, decoder = decoded()
    synced(owner, sim)
    owner.comparer.heal = functools.partial(runner.heal, decoder)
    on_nodes = [p["metadata"] for p in sim.pods() if p["spec"].get("nodeName")]
    changed, deleted, visible = on_nodes[:3]
    waiting = next(p for p in sim.pods() if not p["spec"].get("nodeName"))["metadata"]
    sim.faults.update(lose_event_rate=1.0)
    try:
        v1.patch_namespaced_pod(changed["name"], changed["namespace"],
                                {"metadata": {"labels": {"seen": "late"}}})
        for gone in (deleted, waiting):
            v1.delete_namespaced_pod(gone["name"], gone["namespace"], grace_period_seconds=0)
        v1.create_namespaced_pod(waiting["namespace"], pod_body("born-unseen"))
    finally:
        sim.faults.update(lose_event_rate=0.0)
    v1.patch_namespaced_pod(visible["name"], visible["namespace"],
                            {"metadata": {"labels": {"seen": "yes"}}})
    apply_until(owner, lambda: owner.cache.pod_info(visible["uid"]).labels.get("seen"),
                "the visible change")
    assert owner.cache.pod_info(deleted["uid"]) is not None     # the drift, before
    owner.apply(runner.list_for_comparison(decoder, threading.Event()))
    apply_until(owner, lambda: set(owner.cache.pod_keys()) == bound(sim)
                and set(owner.pending) == unbound(sim)
                and owner.cache.pod_info(changed["uid"]).labels.get("seen") == "late",
                "the repair")
    assert not owner.latest_report.clean
    assert decoder.views["pods"].stats["lists"] == 1      # healed without a relist


def test_a_dead_decoder_is_replaced_and_the_new_one_lists_afresh(sim, v1, decoded):
    owner, decoder = decoded(restart_backoff=(0.05, 0.1))
    synced(owner, sim)
    first = decoder.process
    victim = next(p for p in sim.pods() if p["spec"].get("nodeName"))["metadata"]
    os.kill(first.pid, signal.SIGKILL)
    first.join(WAIT)
    v1.delete_namespaced_pod(victim["name"], victim["namespace"],   # while none watches
                             grace_period_seconds=0)
    apply_until(owner, lambda: decoder.restarts == 1 and decoder.process is not first
                and owner.cache.pod_info(victim["uid"]) is None, "the replacement's list")
    assert decoder.process.is_alive()
    assert set(owner.cache.pod_keys()) == bound(sim)


def test_the_decoder_dies_with_its_owner(sim):
    """An owner killed outright (SIGKILL: nothing of it runs) leaves no decoder behind."""
    script = ("import functools, queue, sys\n"
              "from tests.dashboard.feedhelpers import core_api_at\n"
              "from dashboard.owner.decoder import DecoderProcess\n"
              "if __name__ == '__main__':\n"
              f"    d = DecoderProcess(queue.Queue().put, functools.partial(core_api_at, {sim.url!r}))\n"
              "    d.start()\n"
              "    print(d.process.pid, flush=True)\n"
              "    sys.stdin.read()\n")
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    owner = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=env)
    try:
        child = int(owner.stdout.readline())
        assert running(child)
        owner.kill()
        owner.wait(WAIT)
        wait_for(lambda: not running(child), WAIT, "the decoder to exit")
    finally:
        owner.kill()
        owner.wait()


def running(pid) -> bool:
    """Alive and not a zombie (a container's init may be slow to reap orphans)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_watch_can_start_without_a_list(sim, decoded):
    """resume_from: watch from a version first; "0" replays every pod as ADDED."""
    owner, decoder = decoded(kinds=("pods",), resume_from={"pods": "0"})
    apply_until(owner, lambda: set(owner.cache.pod_keys()) == bound(sim), "the replay")
    assert not owner.synced["pods"]                 # no list was taken
    assert decoder.views["pods"].stats["lists"] == 0


# -- records: what crosses the pipe --------------------------------------------------------

def pod(name, node="", **kw):
    return make_pod(name, namespace="team", node_name=node or None, **kw)


def test_digest_pod_keeps_only_the_named_annotations_and_reports_what_it_cannot_digest():
    p = pod("a", "n1")
    p["metadata"]["annotations"] = {BIND_INFO: '{"node":"n1"}', "noise": "x" * 1000}
    packed, kept = digest_pod(p, (BIND_INFO,))
    assert unpack_pod_info(packed).pod == make_pod_info(p).pod
    assert kept == {BIND_INFO: '{"node":"n1"}'}
    assert digest_pod(p)[1] is None
    broken = pod("b", "n1")
    broken["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
    assert digest_pod(broken)[:3] == (None, uid(broken), broken["metadata"]["resourceVersion"])
    assert "lots" in digest_pod(broken)[3]


def test_records_reach_the_cache_paged_and_watched():
    nodes = [make_node("n1"), make_node("n2")]
    placed = pod("placed", "n1")
    waiting = pod("waiting")
    waiting["metadata"]["annotations"] = {BIND_INFO: '{"node":"n2"}'}
    done = pod("done", "n2")
    broken = pod("broken", "n2")
    broken["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
    listed = [placed, waiting, done, broken]
    relabelled = dict(placed, metadata=dict(placed["metadata"], resourceVersion="9",
                                            labels={"v": "2"}))
    later = [("MODIFIED", relabelled),
             ("MODIFIED", dict(done, status=dict(done["status"], phase="Succeeded"))),
             ("DELETED", broken), ("ADDED", pod("new", "n2"))]
    owner = CacheOwner(Cache(ttl=30))
    restored = []
    owner.applier.on_pods_listed = restored.extend
    records = [digest_pod(p, (BIND_INFO,)) for p in listed]
    ghost = pod("ghost", "n1")    # in a list that restarted: the restart does not list it
    for item in (DecodedPage("nodes", nodes, True), DecodedList("nodes", "5"),
                 DecodedPage("pods", [digest_pod(ghost)], True),
                 DecodedPage("pods", records[:2], True), DecodedPage("pods", records[2:], False)):
        owner.apply(item)
    assert owner.cache.pod_info(uid(ghost)) is not None and not owner.synced["pods"]
    owner.apply(DecodedList("pods", "5"))
    assert owner.cache.pod_info(uid(ghost)) is None
    assert owner.synced == {"pods": True, "nodes": True}
    assert sorted(owner.cache.pod_keys()) == sorted([uid(placed), uid(done)])
    assert sorted(owner.pending) == [uid(waiting)]
    # ghost, placed, waiting, done, two nodes; the broken pod is skipped
    assert (owner.stats["applied"], owner.stats["skipped"]) == (6, 1)
    assert owner.apply(DecodedEvents("pods", [(t, digest_pod(o)) for t, o in later])) == 4
    assert sorted(owner.cache.pod_keys()) == sorted([uid(placed), uid(later[-1][1])])
    assert owner.cache.get_pod(placed)["metadata"]["labels"] == {"v": "2"}
    assert owner.cache.node_info("n2").requested.milli_cpu == \
        make_pod_info(later[-1][1]).requested.milli_cpu
    assert (owner.stats["applied"], owner.stats["skipped"]) == (10, 1)
    # the extender restores from annotated pods only, as lean Mappings
    assert [p["metadata"]["name"] for p in restored] == ["waiting"]
    assert restored[0]["metadata"]["annotations"] == waiting["metadata"]["annotations"]
    assert owner.pending[uid(waiting)]["metadata"]["annotations"][BIND_INFO]


@pytest.mark.parametrize("watch_list", [False, True], ids=["paged list", "watch-list"])
def test_the_first_list_under_churn_and_compaction_syncs_the_owner(feed_cluster, watch_list):
    # issue 26: a first list that outlives the server's history still ends, and the cache
    # then equals the cluster (pages of 5 objects, history compacted every 0.1 s)
    with make_sim(feed_cluster, churn=200, scheduler=True, compaction_interval=0.1) as sim:
        owner = CacheOwner(Cache(ttl=30))
        decoder = DecoderProcess(owner.feed.put, functools.partial(core_api_at, sim.url),
                                 options={"watch_timeout": 60, "watch_list": watch_list,
                                          "page_size": 5}).start()
        try:
            apply_until(owner, lambda: all(owner.synced.values()), "the first lists")
            sim.churn.update(rate=0)
            apply_until(owner, lambda: set(owner.cache.pod_keys()) == bound(sim)
                        and set(owner.pending) == unbound(sim), "the cache to equal the cluster")
            assert sim.store.resources["pods"].compacted_rv > 0
        finally:
            decoder.stop()
        assert not decoder.process.is_alive()


# -- the claims' watch (dashboard/kube/claims.py, the owner's _apply_claims) ---------------

def claim_body(name):
    return {"metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}}


def pod_with_claim(name, claim):
    return {"metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": "100m"}}}],
                     "volumes": [{"name": "data", "persistentVolumeClaim": {
                         "claimName": claim}}]}}


def diagnosis_of(owner, name):
    uid_ = owner.applier.uid_named("default", name)
    return owner.diagnoser.diagnose(owner.pending[uid_])


def test_the_claims_reach_the_owners_diagnoser_once_listed_and_follow_the_cluster(sim, v1,
                                                                                  decoded):
    v1.create_namespaced_persistent_volume_claim("default", claim_body("present"))
    v1.create_namespaced_pod("default", pod_with_claim("restore", "later"))
    v1.create_namespaced_pod("default", pod_with_claim("uses", "present"))
    owner, decoder = decoded(kinds=("pods", "nodes", CLAIMS))
    synced(owner, sim)
    apply_until(owner, lambda: owner.claims.known, "the claims' list")
    assert owner.diagnoser.claims is owner.claims and ("default", "present") in owner.claims
    assert diagnosis_of(owner, "restore").prefilter == 'persistentvolumeclaim "later" not found'
    assert diagnosis_of(owner, "uses").prefilter is None
    assert decoder.views[CLAIMS] not in decoder.reflectors     # the comparer waits on pods, nodes
    v1.create_namespaced_persistent_volume_claim("default", claim_body("later"))
    apply_until(owner, lambda: ("default", "later") in owner.claims, "the new claim")
    assert diagnosis_of(owner, "restore").prefilter is None


def test_claims_forbidden_leave_them_unknown_and_the_owner_running(sim, v1, decoded):
    sim.faults.update(forbidden_resources=CLAIMS)
    v1.create_namespaced_pod("default", pod_with_claim("restore", "missing"))
    owner, decoder = decoded(kinds=("pods", "nodes", CLAIMS),
                             options={"watch_timeout": 60, "backoff": (0.05, 0.1)})
    synced(owner, sim)
    apply_until(owner, lambda: owner.claims.denied, "the denial")
    assert owner.status()["claims"] == {"known": False, "count": 0, "denied": True}
    assert owner.diagnoser.claims is None
    assert diagnosis_of(owner, "restore").unchecked()       # named unchecked, not missing
    views = decoder.views[CLAIMS]
    assert views.wait_for(lambda v: v.stats.get("forbidden", 0) >= 2, WAIT)   # still asking
    one = next(p for p in sim.pods() if p["spec"].get("nodeName"))["metadata"]
    v1.delete_namespaced_pod(one["name"], one["namespace"], grace_period_seconds=0)
    apply_until(owner, lambda: owner.cache.pod_info(one["uid"]) is None, "a pod's deletion")
    assert decoder.process.is_alive() and decoder.restarts == 0
    sim.faults.update(forbidden_resources="")
    apply_until(owner, lambda: owner.claims.known, "the claims once granted")
    assert diagnosis_of(owner, "restore").prefilter == 'persistentvolumeclaim "missing" not found'
