"""The scheduler's health for tools: every check of `dashboard.health`, judged now."""
from typing import Literal

from ninja import Router, Schema
from pydantic import Field

from dashboard import health
from dashboard.api.schemas import READ_ERRORS, example, refuse_repeated

router = Router(tags=["health"])
Level = Literal["ok", "warn", "fail"]


class CheckOut(Schema):
    name: str = Field(description=f"one of {', '.join(health.CHECKS)}")
    title: str
    level: Level
    message: str = Field(description="one line: what is wrong, or that it is fine")
    link: str = Field(description="the page (or pod) where the cause shows; empty if none")


class HealthOut(Schema):
    level: Level = Field(description="the worst of the checks")
    at: float = Field(description="when it was judged, epoch seconds")
    checks: list[CheckOut]
    model_config = example({"level": "fail", "at": 1764000000.0, "checks": [
        {"name": "scheduling", "title": "Scheduling", "level": "fail",
         "message": "Stalled: pending grew 4 -> 520 in 2 min and no pod was assumed or bound",
         "link": "/pods/5a1c2d3e-0000-4000-8000-000000000001/"}]})


@router.get("", response={200: HealthOut, **READ_ERRORS},
            summary="Is the scheduler healthy: each check ok, warn or fail, and why",
            operation_id="get_health")
def get_health(request):
    refuse_repeated(request)
    return health.gather().as_dict()
