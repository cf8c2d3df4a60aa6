"""Why a pending pod is not running, for its page: the cache owner's diagnosis
(scheduling.diagnosis, asked through owner_client.diagnose) beside kube-scheduler's own
last word (the pod's PodScheduled condition, which the owner sends with it).

Why from the owner: only it holds the cache the diagnosis reads. The page asks once when
drawn, as for the pod's spec, and says why when the owner cannot answer.
"""
from dataclasses import dataclass

from dashboard.clients import owner_client
from dashboard.wire.commands import CommandError

DIAGNOSIS_TIMEOUT = 1.0   # seconds the pod's page waits for the owner
NODES_SHOWN = 20          # node links per reason; the rest are counted


@dataclass(frozen=True)
class ReasonGroup:
    reason: str
    count: int
    shown: list          # the first NODES_SHOWN node names
    more: int            # how many are not shown


@dataclass(frozen=True)
class PodDiagnosis:
    """The owner's answer (see DiagnosisOut in the API's schemas), arranged for the page."""
    answer: dict

    @property
    def groups(self) -> list:
        """The nodes by reason, the largest group first (the owner's order)."""
        return [ReasonGroup(g["reason"], g["count"], g["nodes"][:NODES_SHOWN],
                            max(0, len(g["nodes"]) - NODES_SHOWN))
                for g in self.answer["reasons"]]

    @property
    def agrees(self) -> bool | None:
        """Whether kube-scheduler's last message is ours (None when it has said nothing)."""
        said = self.answer.get("kube_scheduler")
        if not said or not said.get("message"):
            return None
        return said["message"] == self.answer["message"]


def pod_diagnosis(uid: str, owner_live: bool) -> tuple[PodDiagnosis | None, str]:
    """(the diagnosis, "") or (None, why there is none)."""
    if not owner_live:
        return None, "no live cache owner to ask"
    try:
        return PodDiagnosis(owner_client.diagnose(uid, nodes=False,
                                                  timeout=DIAGNOSIS_TIMEOUT)), ""
    except CommandError as exc:
        if exc.status == 404:
            return None, "the cache owner does not track it any more"
        if exc.status == 409:
            return None, "it is no longer pending"
        return None, exc.message
