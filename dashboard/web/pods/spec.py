"""A pod's scheduling facts as the cache holds them: node selector, affinity, tolerations,
and the whole cached (lean) pod as YAML, for the pod's page.

Why from the owner: the read model keeps what tables filter and sort on; the pod's
spec lives in the owner's cache, which answers `get_pod` for a pod it caches or tracks
as pending. The page asks once when drawn (its live pushes redraw only the state and
the timeline), and says why when the owner cannot answer.
"""
from dataclasses import dataclass

import yaml

from dashboard.clients import owner_client
from dashboard.wire.commands import CommandError

SPEC_TIMEOUT = 1.0   # seconds the pod's page waits for the owner


@dataclass(frozen=True)
class PodSpec:
    node_selector: dict
    affinity: dict | None
    tolerations: list
    yaml: str

    @property
    def affinity_yaml(self) -> str:
        return _yaml(self.affinity) if self.affinity else ""


# libyaml's emitter where the machine has it: pure Python took 0.8 s for a pod with 10,000
# labels, on the page's request thread.
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _yaml(value) -> str:
    return yaml.dump(value, Dumper=_DUMPER, sort_keys=False, default_flow_style=False,
                     width=100)


def pod_spec(uid: str, owner_live: bool) -> tuple[PodSpec | None, str]:
    """(the pod's spec facts, "") or (None, why not)."""
    if not owner_live:
        return None, "no live cache owner to ask"
    try:
        answer = owner_client.get_pod(uid, timeout=SPEC_TIMEOUT)
    except CommandError as exc:
        if exc.status == 404:
            return None, "the cache neither holds nor tracks it any more"
        return None, exc.message
    pod = answer["pod"]
    spec = pod.get("spec") or {}
    return PodSpec(node_selector=spec.get("nodeSelector") or {},
                   affinity=spec.get("affinity"),
                   tolerations=spec.get("tolerations") or [],
                   yaml=_yaml(pod)), ""
