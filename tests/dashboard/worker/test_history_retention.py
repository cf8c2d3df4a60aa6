"""The history keeps its latest transitions; pruning says how far it went."""
from datetime import datetime, timedelta, timezone

import pytest
from django.utils import timezone as django_time

from dashboard.models import Checkpoint, HealthSample, PrunedHistory, SnapshotSample, Transition
from dashboard.worker import history_retention
from dashboard.worker.tasks import prune_history

T0 = datetime(2026, 11, 22, tzinfo=timezone.utc)


def history(*seqs):
    Transition.objects.bulk_create(
        Transition(seq=seq, at=T0, kind="pod_updated", key=f"uid-{seq % 3}", cause="watch")
        for seq in seqs)


def kept():
    return list(Transition.objects.order_by("seq").values_list("seq", flat=True))


@pytest.mark.django_db
def test_keeps_the_latest_numbers_in_chunks_and_moves_the_floor():
    history(*range(1, 51), 60, 61)       # numbers skip, as snapshot updates are not recorded
    assert PrunedHistory.floor() == 0
    report = history_retention.prune(keep=10, chunk=7)
    assert kept() == [60, 61]     # the latest 10 numbers are 52..61: two of them exist
    assert report == {"transitions": 50, "checkpoints": 0, "samples": 0, "health_samples": 0,
                      "below_seq": 52}
    floor = PrunedHistory.objects.get()
    assert (floor.below_seq, floor.transitions) == (52, 50) and floor.at is not None


@pytest.mark.django_db
def test_chunks_count_rows_so_a_gap_in_the_numbers_costs_no_empty_deletes(
        django_assert_max_num_queries):
    history(*range(1, 11), 10**9 + 1, 10**9 + 2)
    # two chunks of 7 rows: each a count of rows, a delete and the floor's two queries,
    # where chunks of 7 numbers would take 140 million transactions
    with django_assert_max_num_queries(20):
        report = history_retention.prune(keep=2, chunk=7)
    assert kept() == [10**9 + 1, 10**9 + 2]
    assert report["transitions"] == 10 and report["below_seq"] == 10**9 + 1


@pytest.mark.django_db
def test_a_history_within_its_size_is_left_alone():
    history(1, 2, 3)
    assert history_retention.prune(keep=3)["transitions"] == 0
    assert kept() == [1, 2, 3] and PrunedHistory.floor() == 0
    assert history_retention.prune(keep=5)["transitions"] == 0


@pytest.mark.django_db
def test_pruning_again_adds_up_and_never_lowers_the_floor():
    history(*range(1, 21))
    history_retention.prune(keep=15)
    history(*range(21, 31))
    report = history_retention.prune(keep=15)
    assert kept() == list(range(16, 31)) and report["below_seq"] == 16
    assert PrunedHistory.objects.get().transitions == 15


@pytest.mark.django_db
def test_a_checkpoint_goes_once_the_history_after_it_is_not_whole():
    history(*range(1, 31))
    Checkpoint.objects.bulk_create(Checkpoint(seq=seq, at=T0, pods=0, nodes=0, state=b"")
                                   for seq in (5, 14, 15, 25))
    report = history_retention.prune(keep=15)          # keeps 16..30: 15 starts whole
    assert report["checkpoints"] == 2
    assert list(Checkpoint.objects.values_list("seq", flat=True)) == [15, 25]


@pytest.mark.django_db
def test_snapshot_samples_keep_the_latest():
    SnapshotSample.objects.bulk_create(SnapshotSample(generation=g, cache_generation=g)
                                       for g in range(12))
    report = history_retention.prune(keep=0, samples_kept=5)
    assert report["samples"] == 7
    assert list(SnapshotSample.objects.order_by("generation")
                .values_list("generation", flat=True)) == list(range(7, 12))


@pytest.mark.django_db
def test_health_samples_keep_the_last_seconds(settings):
    now = django_time.now()
    HealthSample.objects.bulk_create(HealthSample(at=now - timedelta(hours=h), period=10,
                                                  level="ok") for h in (1, 5, 30, 50))
    assert history_retention.prune(keep=0, health_kept=6 * 3600, now=now)["health_samples"] == 2
    assert HealthSample.objects.count() == 2
    settings.SCHEDVIEW_SAMPLE_KEEP = 2 * 3600   # the task prunes to the setting
    assert prune_history()["health_samples"] == 1
    assert list(HealthSample.objects.values_list("at", flat=True)) == [now - timedelta(hours=1)]


@pytest.mark.django_db
def test_the_task_prunes_to_the_setting_and_zero_keeps_everything(settings):
    history(*range(1, 11))
    settings.SCHEDVIEW_HISTORY_KEEP = 0
    assert prune_history()["transitions"] == 0 and len(kept()) == 10
    settings.SCHEDVIEW_HISTORY_KEEP = 4
    assert prune_history()["transitions"] == 6 and kept() == [7, 8, 9, 10]


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError):
        history_retention.prune(keep=-1)
    with pytest.raises(ValueError):
        history_retention.prune(keep=1, chunk=0)
