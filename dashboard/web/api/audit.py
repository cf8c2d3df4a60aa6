"""The audit over REST: who did what to which pod or token, when, through which door, with
what result and why; newest first, paged back by `before` (the audit page's own read)."""
from datetime import datetime

from ninja import Query, Router, Schema
from pydantic import Field

from dashboard.web.api.errors import ApiError
from dashboard.web.api.schemas import READ_ERRORS, Filter, refuse_repeated
from dashboard.web.audit import reads

router = Router(tags=["audit"])


class AuditQuery(Schema):
    actor: Filter | None = Field(None, description="only this actor's (a username, "
                                                   "kube-scheduler, the owner)")
    action: Filter | None = Field(None, description=f"one of {', '.join(reads.ACTIONS)}")
    target: Filter | None = Field(None, description="only actions on this pod (uid) or token")
    result: Filter | None = Field(None, description="done or refused")
    before: int | None = Field(None, ge=1, le=2**63 - 1,
                               description="only older than this id: the `next_before` "
                                           "of the page before")
    per_page: int = Field(reads.PER_PAGE, ge=1, le=reads.MAX_PER_PAGE)


class AuditOut(Schema):
    id: int
    at: datetime
    actor: str
    via: str = Field(description="the door: page, api token, api session; empty for the "
                                 "extender, the owner and commands")
    action: str
    target: str
    node: str
    ok: bool = Field(description="done (true) or refused (false)")
    message: str = Field(description="the refusal's reason, or what the owner said")
    reason: str = Field(description="the reason the person gave, if any")
    forced_past: str = Field(description="for an assume forced past the filters: what "
                                         "they refused; empty otherwise")


class AuditPageOut(Schema):
    items: list[AuditOut]
    next_before: int | None = Field(description="ask again with before=this for older "
                                                "actions; null: none older")


@router.get("", response={200: AuditPageOut, **READ_ERRORS},
            summary="The audit: actions on pods and tokens, newest first",
            operation_id="list_audit")
def list_audit(request, query: Query[AuditQuery]):
    refuse_repeated(request)
    try:
        found = reads.AuditFilter.from_query(query.dict(exclude_none=True))
    except reads.BadAuditFilter as exc:
        raise ApiError(400, str(exc)) from None
    page = reads.audit_page(found)
    return {"items": [vars(row) for row in page.rows], "next_before": page.next_before}
