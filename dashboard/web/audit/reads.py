"""The audit, as the Audit page and `GET /api/v1/audit` read it: who did what to which pod,
when, through which door, with what result and why, newest first.

Pages are cut by id (a keyset: `before` is the last row's id), so paging back through a
long audit costs one index range a page, however far back.
"""
from dataclasses import dataclass

from django.http import QueryDict

from dashboard.models import AuditAction
from dashboard.web.query_params import query_string, texts, whole_number

PER_PAGE = 50
MAX_PER_PAGE = 500
RESULTS = ("done", "refused")
# What acts on pods and on tokens: the page's choices (the audit holds no other).
ACTIONS = ("schedule", "forget", "expire", "reap", "claim", "revoke_token", "issue_token")
MAX_TEXT = 253


class BadAuditFilter(ValueError):
    """A filter the audit cannot apply; its message says which and why."""


@dataclass(frozen=True)
class AuditFilter:
    actor: str = ""
    action: str = ""
    target: str = ""     # a pod's uid (or namespace/name for a refused assume), a token
    result: str = ""     # done, refused, or "" for both
    before: int | None = None   # the page's cursor: rows older than this id
    per_page: int = PER_PAGE

    @classmethod
    def from_query(cls, query: QueryDict | dict) -> "AuditFilter":
        text = texts(query, ("actor", "action", "target", "result"), MAX_TEXT, BadAuditFilter)
        if text.get("result", "") not in ("", *RESULTS):
            raise BadAuditFilter(f"result: one of {', '.join(RESULTS)}, not {text['result']!r}")
        return cls(**text, before=whole_number(query, "before", None, 1, 2**63 - 1,
                                               BadAuditFilter),
                   per_page=whole_number(query, "per_page", PER_PAGE, 1, MAX_PER_PAGE,
                                         BadAuditFilter))

    def query(self, **changes) -> str:
        """The query string of this filter with `changes`, for links; defaults left out."""
        return query_string(self, **changes)


@dataclass(frozen=True)
class AuditRow:
    id: int
    at: object
    actor: str
    via: str
    action: str
    target: str
    node: str
    ok: bool
    message: str
    reason: str
    forced_past: str    # the check a forced assume went past, "" for none

    @property
    def target_is_pod(self) -> bool:
        return self.action in ("schedule", "forget", "expire", "reap") and "/" not in self.target


@dataclass(frozen=True)
class AuditPage:
    rows: list[AuditRow]
    next_before: int | None    # the cursor of the page of older rows; None: this is the last


def row_of(action: AuditAction) -> AuditRow:
    details = action.details if isinstance(action.details, dict) else {}
    forced = details.get("forced_past") or ""
    return AuditRow(action.id, action.at, action.actor, str(details.get("via") or ""),
                    action.action, action.target, action.node, action.ok, action.message,
                    str(details.get("reason") or ""),
                    forced if isinstance(forced, str) else ", ".join(map(str, forced)))


def audit_page(found: AuditFilter) -> AuditPage:
    rows = AuditAction.objects.order_by("-id")
    if found.actor:
        rows = rows.filter(actor=found.actor)
    if found.action:
        rows = rows.filter(action=found.action)
    if found.target:
        rows = rows.filter(target=found.target)
    if found.result:
        rows = rows.filter(ok=found.result == "done")
    if found.before is not None:
        rows = rows.filter(id__lt=found.before)
    taken = list(rows[:found.per_page + 1])
    shown = [row_of(action) for action in taken[:found.per_page]]
    return AuditPage(shown, shown[-1].id if len(taken) > found.per_page else None)
