"""kube-scheduler's extender endpoints in the REST API's schema: `/api/v1/extender/{verb}`.

The same views as `/extender/{verb}` (`views.py`), so either can be the urlPrefix
of kube-scheduler's extender configuration; here they are listed in the OpenAPI
schema with kube-scheduler's own JSON (k8s.io/kube-scheduler/extender/v1: Go
field names as keys). The request is read by the views, not by the framework, so
the answers stay exactly what kube-scheduler expects: filter and bind report
errors inside a 200 body ("Error"), a malformed request is a 400, and preempt
answers 500 when the owner cannot. No login: kube-scheduler sends none.
"""
from typing import Any

from ninja import Router, Schema
from pydantic import Field

from . import views

router = Router(tags=["extender"])


class ExtenderArgs(Schema):
    Pod: dict[str, Any] = Field(description="the pod to schedule (v1.Pod JSON)")
    Nodes: dict[str, Any] | None = Field(None, description="nodeCacheCapable false: the "
                                                           "candidate nodes (v1.NodeList)")
    NodeNames: list[str] | None = Field(None, description="nodeCacheCapable true: the "
                                                          "candidate node names")


class ExtenderFilterResult(Schema):
    Nodes: dict[str, Any] | None = Field(description="nodeCacheCapable false: the nodes "
                                                     "that fit (at most one)")
    NodeNames: list[str] | None = Field(description="nodeCacheCapable true: the names of "
                                                    "the nodes that fit (at most one)")
    FailedNodes: dict[str, str] = Field(description="node -> why not; preemption may help")
    FailedAndUnresolvableNodes: dict[str, str] = Field(
        description="node -> why not; preemption cannot help")
    Error: str = Field(description="non-empty: the filter failed (still HTTP 200)")


class ExtenderBindingArgs(Schema):
    PodName: str
    PodNamespace: str
    PodUID: str
    Node: str


class ExtenderBindingResult(Schema):
    Error: str = Field(description="non-empty: the bind was refused or failed (still HTTP 200)")


class ExtenderPreemptionArgs(Schema):
    Pod: dict[str, Any] = Field(description="the preemptor (v1.Pod JSON)")
    NodeNameToVictims: dict[str, Any] | None = Field(
        None, description="nodeCacheCapable false: node -> {Pods: [v1.Pod], NumPDBViolations}")
    NodeNameToMetaVictims: dict[str, Any] | None = Field(
        None, description="nodeCacheCapable true: node -> {Pods: [{UID}], NumPDBViolations}")


class ExtenderPreemptionResult(Schema):
    NodeNameToMetaVictims: dict[str, Any] = Field(
        description="node -> {Pods: [{UID}], NumPDBViolations}: the victims to delete")


class ExtenderError(Schema):
    Error: str = Field(description="what was wrong with the request")


def _body(model) -> dict:
    """The request body's schema: the view reads the body itself, so it is declared here."""
    return {"requestBody": {"required": True, "content": {
        "application/json": {"schema": model.model_json_schema()}}}}


@router.post("/filter", auth=None, response={200: ExtenderFilterResult, 400: ExtenderError},
             openapi_extra=_body(ExtenderArgs), summary="kube-scheduler: filter")
def filter_nodes(request):
    """Where the pod may go: the one node it is placed on (then Binding, assumed in the
    cache), or every candidate with why not (Waiting), or the victims' nodes as failed
    but resolvable (Preempting: kube-scheduler then calls preempt)."""
    return views.filter_nodes(request)


@router.post("/bind", auth=None, response={200: ExtenderBindingResult, 400: ExtenderError},
             openapi_extra=_body(ExtenderBindingArgs), summary="kube-scheduler: bind")
def bind(request):
    """Bind a Binding pod on the node it was placed on, through the Celery bind path;
    a repeated bind is no error."""
    return views.bind(request)


@router.post("/preempt", auth=None,
             response={200: ExtenderPreemptionResult, 400: ExtenderError,
                       500: ExtenderError},
             openapi_extra=_body(ExtenderPreemptionArgs), summary="kube-scheduler: preempt")
def preempt(request):
    """The victims the extender chose for this Preempting pod (those still present)."""
    return views.preempt(request)
