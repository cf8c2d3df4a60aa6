"""Nodes over REST: the NodeInfos of the read model, a page at a time, and one in full.

The list runs the nodes page's own filters and sorts (`dashboard.web.nodes.query`), so a tool
and a person see the same nodes for the same query."""
from typing import Literal

from django.core.paginator import Paginator
from django.db.models import Count
from ninja import Query, Router, Schema
from ninja.params import Path
from pydantic import Field

from dashboard.models import NodeRecord, PodRecord
from dashboard.readmodel.read_model import MAX_PAGE
from dashboard.web.api.errors import ApiError
from dashboard.web.api.past import AT_DESCRIPTION, MOMENT_ERRORS, At, moment_of
from dashboard.web.api.schemas import (
    ErrorOut,
    Filter,
    Name,
    NodeDetailOut,
    NodePageOut,
    refuse_repeated,
)
from dashboard.web.nodes.query import RESOURCES, SORT_CHOICES, BadNodeFilter, NodeFilters

router = Router(tags=["nodes"])

PER_PAGE = 200
MAX_PER_PAGE = 1000


class NodeQuery(Schema):
    zone: Filter | None = Field(None, description="only this zone's nodes")
    label: Filter | None = Field(None, description="nodes with this label key, or key=value")
    taint: Filter | None = Field(None, description="nodes with a taint whose key, value or "
                                                   "effect contains this, any case")
    use: Literal[tuple(RESOURCES)] = Field("cpu", description="the resource `above` counts")
    above: int = Field(0, ge=0, le=1000, description="nodes with at least this percent of "
                                                     "their allocatable `use` requested")
    sort: Literal[tuple(SORT_CHOICES)] = Field(
        "name", description="a key, or -key for descending (nodes without the resource last)")
    page: int = Field(1, ge=1, le=MAX_PAGE)
    per_page: int = Field(PER_PAGE, ge=1, le=MAX_PER_PAGE)
    at: At | None = Field(None, description=AT_DESCRIPTION + "; with it, nodes are listed "
                                                             "by name and filtered by zone only")


class NodeAtQuery(Schema):
    at: At | None = Field(None, description=AT_DESCRIPTION + "; with it, what the history "
                          "does not keep (labels, conditions, host ports) is empty")


@router.get("", response={200: NodePageOut, **MOMENT_ERRORS}, summary="List nodes",
            operation_id="list_nodes")
def list_nodes(request, query: Query[NodeQuery]):
    """NodeInfos by name, with their aggregates; deleted nodes still holding pods included."""
    refuse_repeated(request)
    if query.at is not None:
        return _nodes_at(query)
    try:
        filters = NodeFilters.parse({name: str(value) for name, value in
                                     query.dict(exclude_none=True, exclude={"per_page"}).items()})
    except BadNodeFilter as exc:
        raise ApiError(400, str(exc)) from None
    records = filters.records().defer("host_ports", "changed_at")
    page = Paginator(records, query.per_page).get_page(query.page)
    return {"items": list(page), "count": page.paginator.count, "page": page.number,
            "pages": page.paginator.num_pages, "per_page": query.per_page,
            "next_page": page.next_page_number() if page.has_next() else None}


def _nodes_at(query: NodeQuery) -> dict:
    """The list at a moment: by name, the zone the one filter (the history keeps no labels,
    and sorting is the live list's)."""
    others = query.dict(exclude_none=True, exclude={"at", "zone", "page", "per_page"})
    given = sorted(name for name, value in others.items()
                   if value != NodeQuery.model_fields[name].default)
    if given:
        raise ApiError(400, "with at, nodes are listed by name and filtered by zone only "
                            f"(not {', '.join(given)})")
    found = moment_of(query.at)
    nodes = [node for node in found.nodes() if not query.zone or node["zone"] == query.zone]
    page = Paginator(nodes, query.per_page).get_page(query.page)
    return {"items": list(page), "count": page.paginator.count, "page": page.number,
            "pages": page.paginator.num_pages, "per_page": query.per_page,
            "next_page": page.next_page_number() if page.has_next() else None}


@router.get("/{name}", response={200: NodeDetailOut, **MOMENT_ERRORS, 404: ErrorOut},
            summary="One node's aggregates", operation_id="get_node")
def node_detail(request, name: Path[Name], query: Query[NodeAtQuery]):
    """Requested, non-zero requested and allocatable, host ports, images, pods (and the read
    model's pods on it by state), generation, and whether it was deleted with pods left."""
    refuse_repeated(request)
    if query.at is not None:
        found = moment_of(query.at)
        node = found.node(name)
        if node is None:
            raise ApiError(404, f"no node {name!r} in the cache at seq {found.seq}")
        return {**node, "labels": {}, "conditions": [], "host_ports": [],
                "changed_at": found.at}
    record = NodeRecord.objects.filter(name=name).first()
    if record is None:
        raise ApiError(404, f"no node {name!r} in the cache")
    by_state = dict(PodRecord.objects.order_by().filter(node=name)
                    .values_list("state").annotate(n=Count("*")))
    ports = [{"ip": ip, "protocol": protocol, "port": port}
             for ip, protocol, port in record.host_ports]
    return {**vars(record), "host_ports": ports, "pods_by_state": by_state}
