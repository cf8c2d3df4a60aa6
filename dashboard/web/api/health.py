"""The scheduler's health for tools: every check of `dashboard.readmodel.health`, judged now."""
from typing import Literal

from ninja import Router, Schema
from pydantic import Field

from dashboard.readmodel import health
from dashboard.web.api.schemas import READ_ERRORS, example, refuse_repeated

router = Router(tags=["health"])
Level = Literal["ok", "warn", "fail"]


class CheckOut(Schema):
    name: str = Field(description=f"one of {', '.join(health.CHECKS)}")
    title: str
    level: Level
    message: str = Field(description="one line: what is wrong, or that it is fine")
    link: str = Field(description="the page (or pod) where the cause shows; empty if none")


class FeedOut(Schema):
    backlog: int | None = Field(description="decoder messages (batches of watch events, list "
                                            "pages) queued for the cache owner, not applied "
                                            "yet; null without a live owner")
    lag_seconds: float | None = Field(
        description="seconds the cache is behind the watch events received: the age of the "
                    "oldest not yet applied, or the longest one applied since the owner's "
                    "last flush waited; null without a live owner")


class EpisodeOut(Schema):
    name: str
    title: str
    what: str = Field(description="what it does, in a sentence; empty for one to come or past")
    since: float | None = Field(description="when it began (for `next`: when it will), "
                                            "epoch seconds")
    until: float | None = Field(description="when it ends (for `last`: when it ended)")


class ReplayOut(Schema):
    source: str = Field(description="the recording's file name")
    events: int = Field(description="records in the recording")
    played: int = Field(description="records played so far")
    recorded_at: float | None = Field(description="when the last record played was recorded, "
                                                  "epoch seconds; null before the first")
    speed: float = Field(description="times the recorded pace; 0: as fast as possible")
    reschedule: bool = Field(description="whether the recording's pods are left pending for "
                                         "the scheduler (else its bindings are kept)")
    finished_at: float | None = Field(description="when the last record was played, epoch "
                                                  "seconds; null while it plays")


class InjectedOut(Schema):
    now: EpisodeOut | None = Field(description="the fault the simulated cluster injects now")
    next: EpisodeOut | None = Field(description="the episode to come")
    last: EpisodeOut | None = Field(description="the episode that ended last")
    settling: bool = Field(description="whether what `last` caused may still show in the "
                                       "checks (they clear over the health window)")
    calm_seconds: float
    length_seconds: float
    replay: ReplayOut | None = Field(description="the recording the simulated cluster plays "
                                                 "(`manage.py up --replay`), null if none")


class HealthOut(Schema):
    level: Level = Field(description="the worst of the checks")
    at: float = Field(description="when it was judged, epoch seconds")
    feed: FeedOut = Field(description="the watch feed's figures, as the owner reports them")
    checks: list[CheckOut]
    injected: InjectedOut | None = Field(
        description="under `manage.py up`, the simulated cluster's fault episodes (which "
                    "warnings it causes on purpose) and the recording it replays; null "
                    "against a real cluster")
    model_config = example({"level": "fail", "at": 1764000000.0,
                            "feed": {"backlog": 12, "lag_seconds": 0.3}, "checks": [
        {"name": "scheduling", "title": "Scheduling", "level": "fail",
         "message": "Stalled: pending grew 4 -> 520 in 2 min and no pod was assumed or bound",
         "link": "/pods/5a1c2d3e-0000-4000-8000-000000000001/"}], "injected": None})


@router.get("", response={200: HealthOut, **READ_ERRORS, 503: HealthOut},
            summary="Is the scheduler healthy: each check ok, warn or fail, and why",
            description="Answers within a few seconds whatever the database does: its "
                        "check has 2 s (one probe without an answer warns, the next fails). "
                        "A 503 is the same document, with the database check failing and "
                        "no other: the database did not answer, so not even the caller "
                        "could be known (Retry-After says when to ask again).",
            operation_id="get_health", url_name="health")
def get_health(request):
    refuse_repeated(request)
    return health.gather().as_dict()
