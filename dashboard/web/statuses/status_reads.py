"""What the statuses page and REST show: the extender's pod schedule statuses.

They live in the cache owner's memory (the extender decides there), so they are
asked of it over the command channel: a page at a time, filtered by state, or
one pod by namespace and name. Raises dashboard.wire.commands.CommandError:
OwnerUnavailable (503) without a live owner, 404 for a pod not tracked.
"""
from dataclasses import dataclass

from django.core.paginator import Page, Paginator

from dashboard.clients import owner_client
from dashboard.readmodel.read_model import MAX_PAGE
from dashboard.wire.extender import MAX_LIMIT, STATES

PER_PAGE = 50
MAX_PER_PAGE = MAX_LIMIT
TIMEOUT = 5.0          # seconds the owner has to answer a person's request
NODES_SHOWN = 50       # node names listed under each wait reason on a pod's page


class BadStatusQuery(ValueError):
    """A state or page the statuses cannot be filtered by: the message says why."""


def check_state(state: str) -> str:
    """'' (every state) or one of STATES."""
    if state and state not in STATES:
        raise BadStatusQuery(f"state must be one of {', '.join(STATES)} (or empty for all)")
    return state


def check_page(page) -> int:
    """A page number from a query (text) or a caller (int): 1 to MAX_PAGE."""
    if isinstance(page, str) and page.isdigit():
        page = int(page)
    if not isinstance(page, int) or not 1 <= page <= MAX_PAGE:
        raise BadStatusQuery(f"page must be a whole number from 1 to {MAX_PAGE:,}")
    return page


@dataclass
class StatusPage:
    items: list           # status summaries (statuses.PodScheduleStatus.summary)
    counts: dict          # state -> how many pods, whatever the filter
    total: int            # pods matching the filter
    page: Page            # a Django Page over the matches, for the pager
    state: str            # the filter: '' or a state


def statuses_page(state: str = "", number: int = 1, per_page: int = PER_PAGE) -> StatusPage:
    """One page of the statuses matching `state`; a page past the last gives the last."""
    check_state(state)
    check_page(number)
    if not 1 <= per_page <= MAX_PER_PAGE:
        raise BadStatusQuery(f"per_page must be from 1 to {MAX_PER_PAGE}")
    args = {"limit": per_page, "offset": (number - 1) * per_page}
    if state:
        args["state"] = state
    answer = owner_client.extender_statuses(args, timeout=TIMEOUT)
    page = Paginator(range(answer["total"]), per_page).get_page(number)
    if page.number != number:      # past the last page: ask for the last one
        answer = owner_client.extender_statuses(
            dict(args, offset=(page.number - 1) * per_page), timeout=TIMEOUT)
        page = Paginator(range(answer["total"]), per_page).get_page(page.number)
    return StatusPage(answer["items"], answer["counts"], answer["total"], page, state)


def pod_status(namespace: str, name: str) -> dict:
    """One pod's full status: every node's wait reason, victims, bind attempts."""
    return owner_client.extender_status(namespace, name, timeout=TIMEOUT)


@dataclass
class ReasonGroup:
    reason: str
    count: int
    nodes: list           # the first NODES_SHOWN node names, sorted
    more: int             # how many more nodes gave the reason


def reason_groups(wait_reasons: dict) -> list:
    """The wait reasons grouped by reason, most nodes first (5,000 rows read as 3 lines)."""
    by_reason = {}
    for node, reason in wait_reasons.items():
        by_reason.setdefault(reason, []).append(node)
    groups = [ReasonGroup(reason, len(nodes), sorted(nodes)[:NODES_SHOWN],
                          max(0, len(nodes) - NODES_SHOWN))
              for reason, nodes in by_reason.items()]
    return sorted(groups, key=lambda g: (-g.count, g.reason))
