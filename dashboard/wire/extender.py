"""What the extender's processes agree on: where the listener answers, the schedule
states the statuses page filters by, the largest page of statuses one command returns,
and the bind-info annotation a Binding writes on its pod (the owner restores a pod's
status from it after a restart, whoever posted the Binding: the listener or a worker)."""
import json
from typing import Optional

PREFIX = "/extender/"      # the listener's path: POST {PREFIX}filter|bind|preempt
MAX_LIMIT = 1000           # statuses in one extender_statuses answer

WAITING, PREEMPTING, BINDING, BOUND = "Waiting", "Preempting", "Binding", "Bound"
STATES = (WAITING, PREEMPTING, BINDING, BOUND)

BIND_INFO_ANNOTATION = "schedview.io/bind-info"


def parse_address(address: str) -> tuple[str, int]:
    """SCHEDVIEW_EXTENDER_ADDRESS, host:port -> (host, port); settings.py checked the form."""
    host, _, port = address.rpartition(":")
    return host, int(port)


def bind_info_annotation(node: str) -> dict:
    """The annotations the bind path puts on a pod it binds to `node`."""
    return {BIND_INFO_ANNOTATION: json.dumps({"node": node}, separators=(",", ":"))}


def annotated_node(pod) -> Optional[str]:
    """The node named by a pod's bind-info annotation, or None (absent or malformed)."""
    annotations = ((pod.get("metadata") or {}).get("annotations")) or {}
    raw = annotations.get(BIND_INFO_ANNOTATION)
    if not raw:
        return None
    try:
        info = json.loads(raw)
    except (TypeError, ValueError):
        return None
    node = info.get("node") if isinstance(info, dict) else None
    return node if isinstance(node, str) and node else None
