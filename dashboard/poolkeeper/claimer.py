"""The claim's compare-and-swap over real HTTP: a strategic merge patch of the pod that
carries the resourceVersion at which the pod was seen idle.

A 409 is a conflict (someone changed the pod first: retry with another pod), any
other refusal or a transport failure is hard. The request goes over
kube_http (http.client, a keep-alive connection per claim thread). A CAS is never
applied twice: a resent CAS whose first copy did land gets 409. Django-free, for the
benchmark and the tests.
"""
import orjson
from kubernetes import client

from warmpool import ClaimConflict, ClaimRefused, claim_patch

from dashboard.kube.kube_http import KubeHttp, Unreachable, pod_path, status_message

STRATEGIC_MERGE = "application/strategic-merge-patch+json"
FIELD_MANAGER = "schedview-pools"


class ApiClaimer:
    """Callable as PoolScheduler's claimer: (PoolPod, ClaimOptions, claim id) -> the pod."""

    def __init__(self, configuration: client.Configuration):
        self.http = KubeHttp(configuration)

    def __call__(self, pod, options, claim_id) -> dict:
        body = orjson.dumps(claim_patch(pod, options, claim_id))
        try:
            status, data = self.http.request("PATCH", pod_path(pod.namespace, pod.name),
                                             body, STRATEGIC_MERGE,
                                             query=f"fieldManager={FIELD_MANAGER}")
        except Unreachable as error:
            raise ClaimRefused(str(error)) from None
        if status == 409:
            raise ClaimConflict(f"{pod.key}: {status_message(data)}")
        if status != 200:
            raise ClaimRefused(f"HTTP {status}: {status_message(data) or 'no reason given'}")
        return orjson.loads(data)
