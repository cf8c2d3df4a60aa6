"""The owner's feed as the decoder process hands it over (dashboard/owner/decoder.py), built
from Kubernetes objects: so tests feed the owner through the production path, with the
annotations production keeps."""
from dashboard.kube.claims import claim_key
from dashboard.kube.reflector import CLAIMS
from dashboard.owner.comparing import CompareRequest
from dashboard.owner.decoder import (
    COMPARISON_PAGE,
    DecodedEvents,
    DecodedList,
    DecodedPage,
    DecodedRepairs,
    comparable_node,
    comparable_pod,
    digest_pod,
    repaired,
)
from dashboard.owner.listed_pages import ListedPages
from dashboard.wire.extender import BIND_INFO_ANNOTATION

KEPT = (BIND_INFO_ANNOTATION,)


def decoded(kind: str, obj: dict):
    """A pod's record (digested), a claim's key, or a node as it is."""
    if kind == CLAIMS:
        return claim_key(obj)
    return digest_pod(obj, KEPT) if kind == "pods" else obj


def listed(kind: str, objs: list, resource_version: str = "1") -> list:
    """A complete list: one page, then its end."""
    return [DecodedPage(kind, [decoded(kind, o) for o in objs], True),
            DecodedList(kind, resource_version)]


def watched(kind: str, etype: str, obj: dict) -> DecodedEvents:
    """One watch event (ADDED, MODIFIED, DELETED)."""
    return DecodedEvents(kind, [(etype, decoded(kind, obj))])


def fetched(kind: str, key, obj: dict | None) -> DecodedRepairs:
    """A repair of one object: `obj` as a GET found it, None for a 404 (decoder.repaired)."""
    return DecodedRepairs(kind, repaired(kind, key, obj, lambda o: decoded(kind, o)))


def comparison(nodes: list, pods: list, resource_version: str, **kw) -> CompareRequest:
    """The comparer's lists of these objects, as the decoder cuts them."""
    return CompareRequest(ListedPages.of(map(comparable_node, nodes), COMPARISON_PAGE),
                          ListedPages.of(map(comparable_pod, pods), COMPARISON_PAGE),
                          resource_version, **kw)


def synced_items(nodes: list, pods: list, resource_version: str = "1") -> list:
    """Both lists, nodes first, as a fresh owner gets them."""
    return listed("nodes", nodes, resource_version) + listed("pods", pods, resource_version)
