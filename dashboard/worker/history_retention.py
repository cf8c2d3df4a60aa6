"""How much history the database keeps, and the pruning that keeps it so.

Why: the owner appends a transition for every cache event (1,000 a second on a
churning cluster: millions an hour), and a snapshot sample for every snapshot
update. Unbounded, the tables grow until every insert of the owner's writer
pays for the size of their indexes and the pages fall behind. The history keeps
the latest SCHEDVIEW_HISTORY_KEEP transitions (by sequence number) and the
latest SAMPLES_KEPT snapshot samples, and health samples (the overview's charts) of
the last SCHEDVIEW_SAMPLE_KEEP seconds; Celery beat prunes every
SCHEDVIEW_PRUNE_PERIOD. The audit of actions is never pruned. A checkpoint of the cache
goes once the history after it is no longer whole (it could start no reconstruction).

Deletes go in chunks of CHUNK rows, one short transaction each, so the owner's
writer (appending at the top of the same tables) never waits behind a long one.
`PrunedHistory.below_seq` moves with each chunk, in its transaction: a reader
that sees a number below it knows the history before it is gone.
"""
from datetime import timedelta

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from dashboard.models import Checkpoint, HealthSample, PrunedHistory, SnapshotSample, Transition

CHUNK = 20_000          # rows per delete transaction
SAMPLES_KEPT = 20_000   # snapshot samples kept (the chart shows the latest few hundred)


def prune(keep: int, samples_kept: int = SAMPLES_KEPT, chunk: int = CHUNK,
          health_kept: float = 0, now=None) -> dict:
    """Delete all but the latest `keep` transitions (0: keep all), `samples_kept` snapshot
    samples, and health samples older than `health_kept` seconds (0: keep all).
    Returns what was deleted and the history's new floor."""
    if keep < 0 or samples_kept < 0 or chunk < 1 or health_kept < 0:
        raise ValueError("keep, samples_kept, health_kept must be >= 0 and chunk >= 1")
    pruned = 0
    if keep:
        top = Transition.objects.aggregate(top=Max("seq"))["top"]
        if top is not None:
            cutoff = top - keep + 1
            while True:
                # a chunk is `chunk` rows, however sparse their numbers: a gap of a billion
                # is one chunk, not fifty thousand empty ones
                beyond = list(Transition.objects.filter(seq__lt=cutoff).order_by("seq")
                              .values_list("seq", flat=True)[chunk:chunk + 1])
                upper = beyond[0] if beyond else cutoff
                with transaction.atomic():
                    deleted, _ = Transition.objects.filter(seq__lt=upper).delete()
                    pruned += deleted
                    if pruned:
                        _move_floor(upper, deleted)
                if not beyond:
                    break
    # A checkpoint at seq N needs every transition from N + 1 on.
    checkpoints, _ = Checkpoint.objects.filter(seq__lt=PrunedHistory.floor() - 1).delete()
    samples = 0
    top_id = SnapshotSample.objects.aggregate(top=Max("id"))["top"]
    if top_id is not None and samples_kept:
        samples, _ = SnapshotSample.objects.filter(id__lte=top_id - samples_kept).delete()
    health_samples = 0
    if health_kept:
        cutoff = (now or timezone.now()) - timedelta(seconds=health_kept)
        health_samples, _ = HealthSample.objects.filter(at__lt=cutoff).delete()
    return {"transitions": pruned, "checkpoints": checkpoints, "samples": samples,
            "health_samples": health_samples,
            "below_seq": PrunedHistory.floor()}


def _move_floor(below_seq: int, deleted: int) -> None:
    floor, _ = PrunedHistory.objects.select_for_update().get_or_create(pk=1)
    floor.below_seq = max(floor.below_seq, below_seq)
    floor.transitions += deleted
    floor.at = timezone.now()
    floor.save()
