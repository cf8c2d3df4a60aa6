"""The pods pages, the heat map and the snapshot page as the cluster was (issue 24): after
the scripted owner run (tests/dashboard/readmodel/scripted_run.py) each read `?at=` a step's
moment shows what the read model held then (the cache's pods, Assumed and Added, with their
node, state and requests; each node's use and generation), under the banner and with no
live socket; the list's filters and cursors work on the past and keep `at`; a pod the cache
did not hold then is a 404 page saying so."""
import re
from datetime import timedelta
from html import unescape

import pytest

from dashboard.models import Checkpoint, SnapshotSample, Transition
from dashboard.readmodel.cluster_state import percent
from dashboard.readmodel.moment import parse_at
from dashboard.readmodel.read_model import cpu_text, memory_text
from tests.dashboard.web.past.pastpages import page

pytestmark = pytest.mark.django_db(transaction=True)


ROW = re.compile(r'<tr><td>team</td><th scope="row"><a href="/pods/([^/]+)/\?at=(\d+)">[^<]+'
                 r'</a></th>\s*<td>(\w+)')


def test_the_pods_list_at_each_moment_holds_what_was_live_then(viewer_client, run):
    for seq, live, _ in run:
        listed = page(viewer_client, f"/pods/?at={seq}&per_page=500")
        assert f"(seq {seq})" in listed and "ws-connect" not in listed
        rows = ROW.findall(listed)
        assert {uid: state for uid, at, state in rows} == {
            uid: pod[1] for uid, pod in live["pods"].items()}, seq
        assert {at for _, at, _ in rows} <= {str(seq)}


def test_each_pod_page_at_each_moment_is_the_pod_as_it_was(viewer_client, run):
    for seq, live, _ in run:
        for uid, (node, state, bound, milli_cpu, memory, priority) in live["pods"].items():
            detail = page(viewer_client, f"/pods/{uid}/?at={seq}")
            assert "ws-connect" not in detail and f"(seq {seq})" in detail
            facts = re.search(r'<dl class="pod-facts" id="past-pod">(.*?)</dl>', detail, re.S)[1]
            assert f'>{state}</strong>' in facts and ("binding finished" in facts) == bound
            assert f"{cpu_text(milli_cpu) or 'no CPU'}, {memory_text(memory)}" in facts
            assert f'href="/nodes/{node}/?at={seq}">{node}</a>' in facts
            assert f"priority {priority}" in facts
            seqs = [int(s.replace(",", "")) for s in
                    re.findall(r'<td class="num">([\d,]+)</td>\s*<td>', detail)]
            assert seqs and max(seqs) <= seq     # its timeline up to then, not after


def test_the_list_filters_and_walks_its_cursors_at_the_moment(viewer_client, run):
    seq, live, _ = run[7]         # five pods cached: a, b, w1 (n1, n2), c (n3)
    cached = live["pods"]
    for sort in ("name", "-node", "cpu", "-priority"):
        walked, url = [], f"/pods/?at={seq}&per_page=2&sort={sort}"
        while url:
            listed = page(viewer_client, url)
            walked += [uid for uid, _, _ in ROW.findall(listed)]
            following = re.search(r'<a href="\?([^"]+)"[^>]*rel="next"', listed)
            url = f"/pods/?{unescape(following[1])}" if following else None
            if url:
                assert f"at={seq}" in url and "cursor=" in url
        assert sorted(walked) == sorted(cached) and len(walked) == len(set(walked)), sort
    on_n1 = ROW.findall(page(viewer_client, f"/pods/?at={seq}&node=n1&state=Added"))
    assert sorted(uid for uid, _, _ in on_n1) == sorted(
        uid for uid, (node, state, *_) in cached.items() if node == "n1" and state == "Added")
    last = page(viewer_client, f"/pods/?at={seq}&per_page=2&sort=name")
    to_last = re.search(r'<a href="\?([^"]+)"[^>]*rel="last"', last)[1]
    assert len(ROW.findall(page(viewer_client, f"/pods/?{unescape(to_last)}"))) == \
        len(cached) - 2 * ((len(cached) - 1) // 2)


def test_a_bad_filter_and_a_sort_the_past_does_not_keep_are_400_pages(viewer_client, run):
    seq = run[3][0]
    assert "not kept for the past" in page(viewer_client, f"/pods/?at={seq}&sort=changed",
                                           status=400)
    assert "Bad filter" in page(viewer_client, f"/pods/?at={seq}&state=Sleeping", status=400)
    assert "neither a sequence number" in page(viewer_client, "/pods/?at=soon", status=400)


def test_a_pod_the_cache_did_not_hold_then_is_a_404_page_saying_so(viewer_client, run):
    first_seq, first, _ = run[0]
    later_seq, later, _ = run[-1]
    left = next(uid for uid in first["pods"] if uid not in later["pods"])
    gone = page(viewer_client, f"/pods/{left}/?at={later_seq}", status=404)
    assert f"pod {left} was not in the cache then" in gone and "ws-connect" not in gone
    assert "its last transition before then" in gone
    assert "was not in the cache then" in page(viewer_client, f"/pods/nobody/?at={first_seq}",
                                               status=404)


def test_the_pods_list_is_an_htmx_fragment_at_a_moment(viewer_client, run):
    seq = run[2][0]
    fragment = viewer_client.get(f"/pods/?at={seq}&sort=-name", HTTP_HX_REQUEST="true")
    body = fragment.content.decode()
    assert fragment.status_code == 200 and body.lstrip().startswith('<section id="pod-list">')
    assert f'name="at" value="{seq}"' in body


def test_the_heat_map_at_each_moment_colours_each_node_as_its_use_was(viewer_client, run):
    for seq, live, _ in run:
        for metric, key, noun in (("cpu", "milli_cpu", "CPU"), ("memory", "memory", "memory")):
            drawn = page(viewer_client, f"/heatmap/?at={seq}&metric={metric}")
            assert "ws-connect" not in drawn and f"(seq {seq})" in drawn
            cells = dict(re.findall(r'<a id="heat-[^"]+" class="h-[^"]+" href="/nodes/([^/]+)/'
                                    rf'\?at={seq}" title="[^:]+: ([^"]+)"', drawn))
            assert cells == {name: _figure(node, key, noun) for name, node in
                             live["nodes"].items()}, (seq, metric)


def _figure(node, key, noun):
    used = percent(node["requested"][key], node["allocatable"][key])
    return f"no {noun}" if used is None else f"{used:g}% of its {noun} requested"


def test_the_snapshot_page_at_each_moment_lists_the_nodes_by_their_generation_then(
        viewer_client, run):
    # the scripted owner takes no snapshot: one sample a second after each step's moment
    SnapshotSample.objects.bulk_create(
        SnapshotSample(at=parse_at(str(seq)).at + timedelta(seconds=1), generation=1000 + i,
                       cache_generation=1000 + i) for i, (seq, _, _) in enumerate(run))
    for i, (seq, live, _) in enumerate(run):
        shown = page(viewer_client, f"/snapshot/?at={seq}")
        assert "ws-connect" not in shown and f"(seq {seq})" in shown
        assert (f"Generation {999 + i} " in shown) if i else "No snapshot taken yet" in shown
        recent = re.search(r'<section class="panel" id="snapshot-recent">(.*?)</section>',
                           shown, re.S)[1]
        listed = re.findall(rf'href="/nodes/([^/]+)/\?at={seq}">[^<]+</a> '
                            r'<small class="muted">gen (\d+)</small>', recent)
        assert listed == sorted(((name, str(node["generation"])) for name, node
                                 in live["nodes"].items()),
                                key=lambda n: (-int(n[1]), n[0])), seq


def test_the_header_scrubber_spans_the_kept_moments_and_stays_on_the_page(viewer_client, run):
    oldest = Checkpoint.objects.order_by("seq").first().seq
    latest, seq = run[-1][0], run[4][0]
    uid = next(iter(run[4][1]["pods"]))
    for url in (f"/pods/{uid}/?at={seq}", f"/pods/?at={seq}", f"/heatmap/?at={seq}",
                f"/snapshot/?at={seq}"):
        header = page(viewer_client, url)
        assert f'action="{url.split("?")[0]}"' in header
        assert re.search(rf'<input type="range" class="scrubber" min="{oldest}" '
                         rf'max="{latest}" step="1" value="{seq}"', header), url
    live = page(viewer_client, "/pods/")
    assert f'max="{latest}" step="1" value="{latest}"' in live
    assert 'action="/"' in page(viewer_client, "/events/")


def test_a_pod_held_then_whose_transitions_were_pruned_still_shows_as_it_was(viewer_client,
                                                                             run):
    latest = Checkpoint.objects.order_by("-seq").first()
    seq, live, _ = next(step for step in run if step[0] > latest.seq)
    uid, (node, state, *_) = next(   # one the checkpoint holds, unchanged since
        (uid, pod) for uid, pod in live["pods"].items()
        if not Transition.objects.filter(key=uid, seq__gt=latest.seq, seq__lte=seq).exists())
    Transition.objects.filter(key=uid, seq__lte=latest.seq).delete()   # as pruning would
    shown = page(viewer_client, f"/pods/{uid}/?at={seq}")
    assert f">{state}</strong>" in shown and f'href="/nodes/{node}/?at={seq}"' in shown
    assert "None of its transitions up to then are kept" in shown
