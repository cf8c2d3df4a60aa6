"""The reflector against a simulated cluster over real HTTP with the official client, and
against a scripted server (real socket) for the bytes the simulated cluster never sends."""

import gc
import logging
import math
import random
import threading
import time
import weakref

import orjson
import pytest
from kubernetes import client

from dashboard.kube.reflector import ListPage, Reflector, Relisted, Watched, _continue_in_head
from tests.dashboard.feedhelpers import (
    WAIT,
    GatedSleep,
    RecordingApi,
    Running,
    cluster_state,
    item_form,
    make_sim,
    pod_body,
    wait_reflector,
)


def unbound_pods(sim):
    return [p for p in sim.pods() if not p["spec"].get("nodeName")]


# -- list --------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["pods", "nodes"])
def test_initial_list_is_paged_and_complete(sim, kind):
    api = RecordingApi(sim.api_client())
    got = []
    r = Reflector(api, kind, got.append, page_size=4)
    relisted = r.list_once()

    expected = sim.pods() if kind == "pods" else sim.nodes()
    assert isinstance(relisted, Relisted) and relisted.kind == kind
    assert relisted.items == expected            # every object, in order, as the server has it
    assert relisted.resource_version == str(sim.resource_version) == r.resource_version
    pages = math.ceil(len(expected) / 4)
    assert len(api.calls) == pages > 1
    assert all(c["limit"] == 4 and c["status"] == 200 for c in api.calls)
    assert api.calls[0]["continue"] is None
    assert all(c["continue"] for c in api.calls[1:])
    assert r.stats["lists"] == 1 and got == []   # list_once() returns, run() emits


def test_a_label_selector_narrows_the_list(sim, v1):
    name = unbound_pods(sim)[0]["metadata"]
    v1.patch_namespaced_pod(name["name"], name["namespace"],
                            {"metadata": {"labels": {"picked": "yes"}}})
    relisted = Reflector(client.CoreV1Api(sim.api_client()), "pods", [].append,
                         label_selector="picked=yes").list_once()
    assert [p["metadata"]["name"] for p in relisted.items] == [name["name"]]


def _change_then_compact(sim, v1, victim, gone):
    """Between page 1 and page 2: a pod changes, one goes, and the token's version is
    compacted away (capture 99: the next page answers 410)."""
    def hook():
        v1.patch_namespaced_pod(victim["name"], victim["namespace"],
                                {"metadata": {"labels": {"late": "yes"}}})
        v1.delete_namespaced_pod(gone["name"], gone["namespace"])
        sim.compact()
    return hook


def test_expired_continue_token_is_followed_by_one_full_list(sim, v1):
    # client-go's pager (FullListIfExpired): not page 1 again, one unpaged list at the
    # latest version, which no compaction can expire
    victim, gone = sim.pods()[-1]["metadata"], unbound_pods(sim)[0]["metadata"]
    api = RecordingApi(sim.api_client(), after_first_page=_change_then_compact(sim, v1, victim,
                                                                               gone))
    r = Reflector(api, "pods", lambda item: None, page_size=10)
    relisted = r.list_once()

    assert [c["status"] for c in api.calls] == [200, 410, 200]
    assert api.calls[1]["continue"]
    assert api.calls[2] == {"limit": None, "continue": None, "status": 200}
    assert r.stats["full_lists"] == 1 and r.stats["lists"] == 1
    assert relisted.items == sim.pods()           # the cache equals the cluster
    assert relisted.resource_version == str(sim.resource_version)
    assert relisted.items[-1]["metadata"]["labels"]["late"] == "yes"


def test_expired_continue_token_streams_the_full_list_as_a_fresh_first_page(sim, v1):
    victim, gone = sim.pods()[-1]["metadata"], unbound_pods(sim)[0]["metadata"]
    got = []
    api = RecordingApi(sim.api_client(), after_first_page=_change_then_compact(sim, v1, victim,
                                                                               gone))
    r = Reflector(api, "pods", got.append, page_size=10, stream_pages=True)
    r.list_once()
    assert [p.first for p in got] == [True, True]   # the second replaces the first
    assert len(got[0].items) == 10 and got[1].items == sim.pods()
    assert gone["uid"] in {p["metadata"]["uid"] for p in got[0].items}


class ChurnBetweenPages(RecordingApi):
    """After every list request the cluster changes; after every page it also compacts,
    so no continue token outlives its page (a first list slower than the server keeps
    history)."""

    def __init__(self, sim, api_client):
        super().__init__(api_client)
        self.sim = sim

    def _record(self, method, kw):
        try:
            return super()._record(method, kw)
        finally:
            if not kw.get("watch"):
                for _ in range(5):
                    self.sim.churn.step()
                if kw.get("limit"):
                    self.sim.compact()


def test_the_first_list_finishes_under_churn_that_outruns_every_continue_token(running, sim):
    # Restarting from page 1 never ended here (issue 26); one full list does.
    sim.churn.update(scheduler=True)
    api = ChurnBetweenPages(sim, sim.api_client())
    r, rec = running.start(api=api, page_size=4)
    assert [c["status"] for c in api.calls] == [200, 410, 200]
    assert api.calls[2]["limit"] is None
    assert r.stats["lists"] == 1 and r.stats["full_lists"] == 1
    rec.wait_mirrors(sim)      # the changes after the full list came through the watch


def test_watch_list_lists_through_the_watch_then_watches_on(running, sim, v1):
    api = RecordingApi(sim.api_client())
    r, rec = running.start(api=api, watch_list=True, page_size=4)
    assert api.calls == []                       # no list request at all
    assert r.stats["watch_lists"] == 1 and r.stats["lists"] == 1 and r.stats["watches"] == 1
    relisted = rec.relists[0]
    assert [item_form(o) for o in relisted.items] == sim.pods()
    assert relisted.resource_version == str(sim.resource_version)
    v1.create_namespaced_pod("default", pod_body("after-the-list"))
    rec.wait_for(lambda rec: rec.events_for("after-the-list"), "the watch after the list")
    assert r.stats["watches"] == 1               # the same stream
    rec.wait_mirrors(sim)


def test_watch_list_pages_reach_the_sink_as_a_list_would(sim):
    got = []
    r = Reflector(client.CoreV1Api(sim.api_client()), "pods", got.append, page_size=4,
                  stream_pages=True, watch_list=True)
    thread = r.start()
    try:
        wait_reflector(r, lambda r: r.stats["watch_lists"] == 1, "the watch-list")
    finally:
        r.stop()
        thread.join(WAIT)
    pages, (relisted,) = got[:-1], got[-1:]
    assert all(isinstance(p, ListPage) and len(p.items) <= 4 for p in pages)
    assert [p.first for p in pages] == [True] + [False] * (len(pages) - 1)
    assert [item_form(o) for p in pages for o in p.items] == sim.pods()
    assert isinstance(relisted, Relisted) and relisted.items == []
    assert relisted.resource_version == str(sim.resource_version)


def test_watch_list_under_churn_and_compaction_makes_the_mirror_the_cluster(feed_cluster):
    with make_sim(feed_cluster, churn=200, scheduler=True, compaction_interval=0.05) as sim:
        running = Running(sim)
        try:
            r, rec = running.start(watch_list=True, page_size=4)
            rec.wait_for(lambda rec: len(rec.watched) > 20, "changes after the list")
            sim.churn.update(rate=0)
            rec.wait_mirrors(sim)
            assert r.stats["watch_lists"] >= 1
            assert sim.store.resources["pods"].compacted_rv > 0   # compacted meanwhile
        finally:
            running.stop_all()


def test_a_server_refusing_the_watch_list_is_listed_in_pages(scripted):
    script, api = scripted
    script.watch_status, script.watch_body = 400, b'{"kind":"Status","code":400}'
    rec = []
    r = Reflector(api, "pods", rec.append, watch_list=True, rand=lambda: 0.0)
    thread = r.start()
    try:
        wait_reflector(r, lambda r: r.stats["lists"] == 1, "the paged list")
    finally:
        r.stop()
        thread.join(WAIT)
    assert r.watch_list is False and r.stats["watch_lists"] == 0
    assert isinstance(rec[0], Relisted)


def test_a_server_ignoring_the_watch_list_is_listed_in_pages(scripted):
    # a server older than the watch-list sends the ADDED events of a watch without a
    # version and never the initial-events-end bookmark, until timeoutSeconds
    script, api = scripted
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "9"}}
    script.list_items = [pod]
    script.watch_chunks = [orjson.dumps({"type": "ADDED", "object": pod}) + b"\n"]
    ticks = iter(range(0, 10**6, 100))          # every look at the clock: 100 s later
    rec = []
    r = Reflector(api, "pods", rec.append, watch_list=True, watch_timeout=60,
                  clock=lambda: next(ticks), rand=lambda: 0.0)
    thread = r.start()
    try:
        wait_reflector(r, lambda r: r.stats["lists"] == 1, "the paged list")
    finally:
        r.stop()
        thread.join(WAIT)
    assert r.watch_list is False and r.stats["watch_lists"] == 0
    assert rec[0] == Relisted("pods", [pod], "10")
    assert "sendInitialEvents=true" in script.requests[0]
    assert "watch" not in script.requests[1]


def test_run_emits_the_list_first(running, sim):
    r, rec = running.start(page_size=9)
    assert isinstance(rec.items[0], Relisted)
    assert rec.mirror == cluster_state(sim, "pods")


def test_a_digest_stands_for_every_object_listed_and_watched(sim, v1):
    got = []
    r = Reflector(client.CoreV1Api(sim.api_client()), "pods", got.append, page_size=7,
                  digest=lambda obj: ("digest", obj["metadata"]["name"]))
    thread = r.start()
    try:
        wait_reflector(r, lambda r: r.state == "watching", "the watch")
        v1.create_namespaced_pod("default", pod_body("d1"))
        wait_reflector(r, lambda r: r.stats["events"] > 0, "the event for d1")
    finally:
        r.stop()
        thread.join(WAIT)
    assert got[0].items == [("digest", p["metadata"]["name"]) for p in sim.pods()
                            if p["metadata"]["name"] != "d1"]
    assert [(w.type, w.obj) for w in got[1:]] == [("ADDED", ("digest", "d1"))]


class Listed:
    """A digest that a weak reference can follow."""


def test_a_list_handed_over_is_not_held_through_the_watch(sim):
    """The list is the sink's once handed over: a reflector that kept it through the watch
    held 20,000 whole nodes (950 MB) in the stand-in for as long as the watch lasted."""
    listed = []

    def sink(item):
        if isinstance(item, Relisted):
            listed.extend(weakref.ref(obj) for obj in item.items)

    r = Reflector(client.CoreV1Api(sim.api_client()), "nodes", sink, page_size=2,
                  digest=lambda obj: Listed())
    thread = r.start()
    try:
        wait_reflector(r, lambda r: r.state == "watching", "the watch")
        gc.collect()
        assert listed and [ref for ref in listed if ref() is not None] == []
    finally:
        r.stop()
        thread.join(WAIT)


def test_the_next_page_is_asked_for_while_this_one_is_parsed(sim):
    threads = []

    class ThreadRecordingApi(RecordingApi):
        def list_pod_for_all_namespaces(self, **kw):
            threads.append(threading.current_thread().name)
            return super().list_pod_for_all_namespaces(**kw)
    api = ThreadRecordingApi(sim.api_client())
    relisted = Reflector(api, "pods", [].append, page_size=4).list_once()
    assert relisted.items == sim.pods()
    assert threads[0] == threading.current_thread().name and len(threads) > 2
    assert all(name.startswith("reflector-pods-page") for name in threads[1:])
    assert [c["continue"] is None for c in api.calls] == [True] + [False] * (len(api.calls) - 1)


def test_the_continue_token_is_read_from_the_head_only():
    assert _continue_in_head(b'{"metadata":{"resourceVersion":"5","continue":"abc="},'
                             b'"items":[{"continue":"x"}]}') == "abc="
    assert _continue_in_head(b'{"metadata":{"resourceVersion":"5"},"items":[{"continue":"x"}]}') \
        is None
    assert _continue_in_head(b'{"items":[],"metadata":{"continue":"late"}}') is None


def test_streamed_pages_reach_the_sink_as_they_arrive(sim):
    got = []
    r = Reflector(client.CoreV1Api(sim.api_client()), "pods", got.append, page_size=4,
                  stream_pages=True)
    relisted = r.list_once()
    assert relisted.items == [] and relisted.resource_version == str(sim.resource_version)
    assert all(isinstance(p, ListPage) for p in got) and len(got) == math.ceil(len(sim.pods()) / 4)
    assert [p.first for p in got] == [True] + [False] * (len(got) - 1)
    assert [o for p in got for o in p.items] == sim.pods()


def test_run_can_resume_from_a_version_without_listing(sim, v1):
    got = []
    r = Reflector(client.CoreV1Api(sim.api_client()), "pods", got.append)
    r.resource_version = "0"     # replays every pod as ADDED
    thread = threading.Thread(target=r.run, kwargs={"resume": True}, daemon=True)
    thread.start()
    try:
        wait_reflector(r, lambda r: r.stats["events"] == len(sim.pods()), "the replay")
    finally:
        r.stop()
        thread.join(WAIT)
    assert r.stats["lists"] == 0 and all(isinstance(i, Watched) for i in got)
    assert {w.obj["metadata"]["uid"] for w in got} == set(cluster_state(sim, "pods"))


# -- watch -------------------------------------------------------------------------------

def test_watch_delivers_added_modified_deleted(running, sim, v1):
    r, rec = running.start()
    v1.create_namespaced_pod("default", pod_body("w1"))
    v1.patch_namespaced_pod("w1", "default", {"metadata": {"labels": {"step": "2"}}})
    v1.delete_namespaced_pod("w1", "default")
    rec.wait_for(lambda rec: any(w.type == "DELETED" for w in rec.events_for("w1")),
                 "w1 deleted")

    events = rec.events_for("w1")
    assert events[0].type == "ADDED" and events[-1].type == "DELETED"
    assert {w.type for w in events[1:-1]} == {"MODIFIED"}
    assert any(w.obj["metadata"]["labels"].get("step") == "2" for w in events)
    assert all(isinstance(w, Watched) and w.kind == "pods" for w in events)
    versions = [int(w.resource_version) for w in events]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    assert all(w.resource_version == w.obj["metadata"]["resourceVersion"] for w in events)
    assert int(r.resource_version) >= versions[-1]
    assert rec.mirror == cluster_state(sim, "pods")
    assert len(rec.relists) == 1 and r.stats["events"] == len(rec.watched)


def test_node_watch(running, sim, v1):
    r, rec = running.start("nodes")
    name = sim.nodes()[0]["metadata"]["name"]
    v1.patch_node(name, {"metadata": {"labels": {"schedview.test/mark": "1"}}})
    rec.wait_for(lambda rec: rec.events_for(name), "the node's MODIFIED")
    (event,) = rec.events_for(name)
    assert event.type == "MODIFIED" and event.kind == "nodes"
    assert event.obj["metadata"]["labels"]["schedview.test/mark"] == "1"
    assert rec.mirror == cluster_state(sim, "nodes")


def test_bookmarks_advance_the_version_without_emitting(running, sim, v1):
    r, rec = running.start()
    emitted, before = len(rec.items), int(r.resource_version)
    # A node change moves the cluster's resourceVersion; the pod watch only learns of
    # the new version from a bookmark.
    v1.patch_node(sim.nodes()[0]["metadata"]["name"], {"metadata": {"labels": {"b": "1"}}})
    target = sim.resource_version
    assert target > before
    wait_reflector(r, lambda r: int(r.resource_version) == target, "a bookmark at the new rv")
    assert len(rec.items) == emitted
    assert r.stats["bookmarks"] > 0


def test_server_timeout_rewatches_at_once(running):
    sleeps = []
    r, rec = running.start(watch_timeout=1, sleep=sleeps.append)
    wait_reflector(r, lambda r: r.stats["timeouts"] >= 2, "two watches ended by the server")
    assert sleeps == [] and r.stats["reconnects"] == 0
    assert r.stats["lists"] == 1 and len(rec.relists) == 1


@pytest.mark.parametrize("abrupt", [False, True], ids=["graceful", "abrupt"])
def test_dropped_watch_resumes_without_losing_events(running, sim, v1, abrupt):
    sleep = GatedSleep()
    r, rec = running.start(sleep=sleep)
    first, gone = sim.pods()[0]["metadata"], unbound_pods(sim)[0]["metadata"]
    v1.create_namespaced_pod("default", pod_body("d0"))
    rec.wait_for(lambda rec: rec.events_for("d0"), "d0 before the drop")
    before = len(rec.watched)
    assert sim.drop_watches(abrupt=abrupt) == 1
    sleep.wait_entered()  # disconnected, not yet watching again: change the cluster now
    for name in ("d1", "d2", "d3"):
        v1.create_namespaced_pod("default", pod_body(name))
    v1.patch_namespaced_pod(first["name"], first["namespace"],
                            {"metadata": {"labels": {"while": "away"}}})
    v1.delete_namespaced_pod(gone["name"], gone["namespace"])
    sleep.release()

    rec.wait_mirrors(sim)
    assert len(rec.relists) == 1 and r.stats["lists"] == 1 and r.stats["expired"] == 0
    for name in ("d0", "d1", "d2", "d3"):  # each once: resumed from the last version
        assert [w.type for w in rec.events_for(name)] == ["ADDED"]
    assert len(rec.watched) == before + 3 + 1 + 2  # 3 ADDED, a patch, a delete (2 events)
    assert rec.events_for(gone["name"])[-1].type == "DELETED"
    assert rec.events_for(first["name"])[-1].obj["metadata"]["labels"]["while"] == "away"
    assert r.stats["reconnects"] == 1
    assert 0 <= sleep.delays[0] <= 0.2  # the first retry waits at most backoff[0]


def test_compaction_while_away_relists(running, sim, v1):
    sleep = GatedSleep()
    r, rec = running.start(sleep=sleep)
    old_rv = r.resource_version
    sim.drop_watches(abrupt=True)
    sleep.wait_entered()
    v1.create_namespaced_pod("default", pod_body("c1"))
    gone = unbound_pods(sim)[0]["metadata"]
    v1.delete_namespaced_pod(gone["name"], gone["namespace"])
    sim.compact()  # the resume from old_rv now answers ERROR 410
    sleep.release()

    rec.wait_for(lambda rec: len(rec.relists) == 2, "a relist after the 410")
    relisted = rec.relists[-1]
    assert relisted.items == sim.pods()
    assert int(relisted.resource_version) > int(old_rv)
    assert r.stats["expired"] == 1 and r.stats["lists"] == 2
    assert rec.events_for("c1") == []  # the relist, not an event, brought it
    # and the watch goes on from the relist's version
    v1.create_namespaced_pod("default", pod_body("c2"))
    rec.wait_for(lambda rec: rec.events_for("c2"), "c2 watched after the relist")
    rec.wait_mirrors(sim)


@pytest.mark.parametrize("trigger", ["compaction", "request_relist"])
def test_lost_events_are_repaired_by_a_later_relist(running, sim, v1, trigger):
    sleep = GatedSleep()
    r, rec = running.start(sleep=sleep)
    gone = unbound_pods(sim)[0]["metadata"]
    sim.faults.update(lose_event_rate=1.0)
    v1.create_namespaced_pod("default", pod_body("lost"))
    v1.delete_namespaced_pod(gone["name"], gone["namespace"])
    sim.faults.update(lose_event_rate=0.0)
    v1.create_namespaced_pod("default", pod_body("seen"))
    rec.wait_for(lambda rec: rec.events_for("seen"), "the event after the lost ones")
    names = {o["metadata"]["name"] for o in rec.mirror.values()}
    assert "lost" not in names and gone["name"] in names  # the mirror is wrong now

    if trigger == "compaction":
        sim.drop_watches()
        sleep.wait_entered()
        v1.create_namespaced_pod("default", pod_body("later"))
        sim.compact()
        sleep.release()
    else:
        r.request_relist()
    rec.wait_for(lambda rec: len(rec.relists) == 2, "the repairing relist")
    rec.wait_mirrors(sim)
    names = {o["metadata"]["name"] for o in rec.mirror.values()}
    assert "lost" in names and gone["name"] not in names


# -- the server going away -----------------------------------------------------------------

def test_server_death_backs_off_exponentially_with_jitter_and_resumes(running, sim):
    rng = random.Random(5)
    draws = []

    def rand():
        draws.append(rng.random())
        return draws[-1]

    delays = []
    slept = threading.Condition()

    def sleep(seconds):  # injected: no real waiting; the 6th failure brings the server back
        with slept:
            delays.append(seconds)
            if len(delays) == 6:
                sim.restore()
            slept.notify_all()

    r, rec = running.start(sleep=sleep, rand=rand, backoff=(0.2, 1.0))
    sim.kill()
    # written while the API server is down (as another API server would): not lost
    sim.api.create_pod("default", pod_body("while-dead"), "test")
    rec.wait_for(lambda rec: rec.events_for("while-dead"), "the pod created while down")
    rec.wait_mirrors(sim)

    bounds = [0.2, 0.4, 0.8, 1.0, 1.0, 1.0]
    assert len(delays) == 6
    for delay, draw, bound in zip(delays, draws, bounds):
        assert delay == pytest.approx(draw * bound)
        assert 0 <= delay <= bound
    assert r.stats["lists"] == 1  # resumed from the last version, no relist

    # a healthy session resets the backoff: the next failure waits at most backoff[0]
    wait_reflector(r, lambda r: r.state == "watching" and r.stats["bookmarks"] > 0
                   and r.last_watch_end == "disconnected", "a healthy session")
    bookmarks = r.stats["bookmarks"]
    wait_reflector(r, lambda r: r.stats["bookmarks"] > bookmarks, "a bookmark after restore")
    sim.drop_watches(abrupt=True)
    with slept:
        assert slept.wait_for(lambda: len(delays) == 7, WAIT)
    assert delays[6] == pytest.approx(draws[6] * 0.2)


# -- stopping ----------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["stop()", "event"])
def test_stop_ends_a_quiet_watch_promptly(feed_cluster, how):
    # bookmarks only every 60 s: nothing arrives to wake the read, only the stop can
    stop = threading.Event()
    with make_sim(feed_cluster, bookmark_interval=60) as sim:
        api_client = sim.api_client()
        rec = []
        r = Reflector(client.CoreV1Api(api_client), "pods", rec.append, stop=stop,
                      watch_timeout=300)
        thread = r.start()
        wait_reflector(r, lambda r: r.state == "watching", "the watch")
        started = time.monotonic()
        r.stop() if how == "stop()" else stop.set()
        thread.join(WAIT)
        elapsed = time.monotonic() - started
        api_client.close()
    assert not thread.is_alive()
    assert elapsed < 3.0, elapsed  # without the cut it would wait out the 75 s silence bound
    assert r.state == "stopped" and r.last_watch_end == "stopped"


def test_stop_during_backoff(running, sim):
    r, rec = running.start(backoff=(30.0, 30.0), rand=lambda: 1.0)  # real 30 s waits
    sim.kill()
    wait_reflector(r, lambda r: r.state == "backing off", "the backoff")
    thread = running.started[-1][1]
    started = time.monotonic()
    r.stop()
    thread.join(WAIT)
    assert not thread.is_alive() and time.monotonic() - started < 3.0


# -- bytes the simulated cluster never sends: a scripted server --------------------------

def pod(name, rv, uid=True, kind=True):
    obj = {"metadata": {"name": name, "namespace": "default", "resourceVersion": str(rv)},
           "spec": {}, "status": {"phase": "Pending"}}
    if uid:
        obj["metadata"]["uid"] = f"uid-{name}"
    if kind:
        obj = {"kind": "Pod", "apiVersion": "v1", **obj}
    return obj


def line(type_, obj) -> bytes:
    return orjson.dumps({"type": type_, "object": obj}) + b"\n"


def test_malformed_lines_and_missing_uids_are_skipped(scripted):
    script, api = scripted
    script.list_items = [pod("a", 5, kind=False), pod("no-uid", 6, uid=False, kind=False)]
    split = line("MODIFIED", pod("a", 13))
    script.watch_chunks = [
        line("ADDED", pod("b", 11)),
        b"this is not json\n",
        line("ADDED", pod("c", 12, uid=False)),                   # no metadata.uid
        split[:10], split[10:30], split[30:],                    # one line over 3 chunks
        line("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": "14"}})
        + line("PATCHED", pod("a", 15)),                         # two lines, unknown type
        b'{"type":"ADDED"}\n[1,2]\n{"type":"ADDED","object":{"metadata":"x"}}\n',
        b"\n",
        line("DELETED", pod("b", 16)) + b'{"type":"ADDED","obj',  # ends inside a line
    ]
    got = []
    r = Reflector(api, "pods", got.append, page_size=100, watch_timeout=30)
    relisted = r.list_once()
    assert [o["metadata"]["name"] for o in relisted.items] == ["a"]
    assert r.resource_version == "10"

    assert r.watch_once() == "disconnected"  # ended long before its 30 s: not a timeout
    assert [(w.type, w.obj["metadata"]["name"], w.resource_version) for w in got] == [
        ("ADDED", "b", "11"), ("MODIFIED", "a", "13"), ("DELETED", "b", "16")]
    assert r.resource_version == "16"
    assert r.stats["skipped_no_uid"] == 2        # one listed, one watched
    assert r.stats["malformed"] == 6             # garbage, unknown type, 3 shapes, cut tail
    assert r.stats["bookmarks"] == 1 and r.stats["events"] == 3
    assert "resourceVersion=10" in script.requests[-1]
    assert "allowWatchBookmarks=true" in script.requests[-1]


def test_problem_logs_are_rate_limited(scripted, caplog):
    script, api = scripted
    now = [100.0]
    script.watch_chunks = [b"garbage %d\n" % i for i in range(300)]
    r = Reflector(api, "pods", lambda item: None, clock=lambda: now[0], log_interval=10)
    r.resource_version = "1"
    with caplog.at_level(logging.WARNING, logger="schedview.feed.reflector"):
        r.watch_once()
        assert r.stats["malformed"] == 300
        assert len([m for m in caplog.messages if "unparseable" in m]) == 1
        now[0] += 11
        script.watch_chunks = [b"garbage again\n"]
        r.watch_once()
    messages = [m for m in caplog.messages if "unparseable" in m]
    assert len(messages) == 2 and "299 more like this suppressed" in messages[1]


@pytest.mark.parametrize("status,body,why", [
    (200, line("ERROR", {"kind": "Status", "code": 410, "reason": "Expired",
                         "message": "too old resource version: 1 (9)"}), "expired"),
    (200, line("ERROR", {"kind": "Status", "code": 500, "reason": "InternalError"}), "error"),
    (410, orjson.dumps({"kind": "Status", "code": 410, "reason": "Gone"}), "expired"),
    (500, orjson.dumps({"kind": "Status", "code": 500}), "error"),
], ids=["error-event-410", "error-event-500", "http-410", "http-500"])
def test_watch_errors(scripted, status, body, why):
    script, api = scripted
    if status == 200:
        script.watch_chunks = [body]
    else:
        script.watch_status, script.watch_body = status, body
    r = Reflector(api, "pods", lambda item: None)
    r.resource_version = "5"
    assert r.watch_once() == why
    assert r.stats["expired" if why == "expired" else "errors"] == 1
    assert r.resource_version == "5"


# -- a silent watch (issue 22): open, and nothing flowing --------------------------------

def test_a_silent_watch_is_restarted_from_its_version_within_the_bound(scripted, caplog):
    script, api = scripted
    script.hold.set()  # headers, then nothing at all: no event, no bookmark
    r = Reflector(api, "pods", lambda item: None, silence=0.4, backoff=(30.0, 30.0))
    r.resource_version = "5"
    with caplog.at_level(logging.WARNING, logger="schedview.feed.reflector"):
        started = time.monotonic()
        thread = threading.Thread(target=r.run, kwargs={"resume": True}, daemon=True)
        thread.start()
        wait_reflector(r, lambda r: r.stats["silent"] >= 2, "two silent watches restarted")
        elapsed = time.monotonic() - started
        r.stop()
        thread.join(WAIT)
    assert not thread.is_alive()
    assert elapsed >= 2 * 0.4                      # a watch is given its whole bound
    assert r.stats["reconnects"] == 0              # re-watched at once, not after a backoff
    watches = [path for path in script.requests if "watch=true" in path]
    assert len(watches) >= 3 and all("resourceVersion=5" in p for p in watches)
    assert not any("watch=true" not in path for path in script.requests)   # never relisted
    warned = [m for m in caplog.messages if "said nothing" in m]
    assert len(warned) == r.stats["silent"]        # once per silent watch
    assert warned[0] == ("pods watch said nothing (no event, no bookmark) for 0.4 s: "
                         "dropped and started again (last resourceVersion 5)")


def test_silence_counts_from_the_last_word_across_restarted_watches(scripted):
    script, api = scripted
    now = [90.0]
    script.list_items = [pod("a", 5, kind=False)]
    script.watch_chunks = [line("BOOKMARK", {"kind": "Pod",
                                             "metadata": {"resourceVersion": "7"}})]
    script.hold.set()   # the bookmark, then silence
    r = Reflector(api, "pods", lambda item: None, silence=0.3, clock=lambda: now[0])
    assert r.silent_for() is None                  # nothing asked yet
    r.list_once()                                  # a list page is the server speaking
    assert r.silent_for(now=95.0) == 5.0
    now[0] = 100.0
    assert r.watch_once() == "silent" and r.resource_version == "7"
    assert r.silent_for(now=130.0) == 30.0         # since the bookmark
    script.watch_chunks = []                       # the next watch says nothing at all
    assert r.watch_once() == "silent"
    assert "resourceVersion=7" in script.requests[-1]
    assert r.silent_for(now=160.0) == 60.0         # a restart is no word from the server
    assert r.stats["silent"] == 2 and r.stats["bookmarks"] == 1


@pytest.mark.parametrize("silence", [0, -1.0])
def test_a_silence_bound_must_be_positive(silence):
    with pytest.raises(ValueError, match="silence must be a positive"):
        Reflector(None, "pods", lambda item: None, silence=silence)


def test_watch_objects_match_what_a_list_would_return(running, sim, v1):
    # the sink gets raw API objects: kind/apiVersion aside, a watched object equals the
    # listed one (the owner reconciles both into one cache)
    r, rec = running.start()
    v1.create_namespaced_pod("default", pod_body("same"))
    rec.wait_for(lambda rec: rec.events_for("same"), "the ADDED")
    (event,) = rec.events_for("same")
    assert event.obj["kind"] == "Pod" and event.obj["apiVersion"] == "v1"
    assert item_form(event.obj) == sim.pod("default", "same")


def test_a_list_already_too_old_to_watch_from_backs_off(scripted):
    # history shorter than a list takes: every watch from the fresh list's version
    # answers 410; the reflector must not relist in a tight loop
    script, api = scripted
    script.list_items = [pod("a", 5, kind=False)]
    script.watch_chunks = [line("ERROR", {"kind": "Status", "code": 410, "reason": "Expired"})]
    delays = []
    got = []
    r = Reflector(api, "pods", got.append, rand=lambda: 1.0, backoff=(0.2, 10.0),
                  sleep=lambda s: (delays.append(s), len(delays) == 4 and r.stop()))
    r.run()
    assert delays == pytest.approx([0.2, 0.4, 0.8, 1.6])
    assert r.stats["lists"] == 4 and r.stats["expired"] == 4
    assert [type(i).__name__ for i in got] == ["Relisted"] * 4
