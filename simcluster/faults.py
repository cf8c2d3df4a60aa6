"""Fault knobs: failed, slow or refused binds, conflicting pod updates, lost watch
events, silent watches and resources RBAC forbids, changeable at any time.

Draws come from one seeded RNG so a run with the same knobs fails the same share.
"""

import random
import threading
import time
from dataclasses import dataclass, field

from simcluster.status import ApiError


@dataclass
class Faults:
    bind_failure_rate: float = 0.0   # share of client binds answered with an error
    bind_failure_code: int = 500     # 409 is a Conflict; any other code a plain failure
    bind_delay: float = 0.0          # seconds every client bind waits before it runs
    # An admission policy denying pods/binding (403 Forbidden): a share of all Bindings,
    # and every Binding in the namespaces named (comma-separated).
    binding_refusal_rate: float = 0.0
    binding_refused_namespaces: str = ""
    lose_event_rate: float = 0.0     # share of writes whose watch event is never sent
    update_conflict_rate: float = 0.0  # share of client pod updates/patches answered 409
    # Every watch stream, open or opened, says nothing (no event, no bookmark, no end) while
    # on, its connection held open: a hung API server or a blackholed connection (issue 22).
    # Off again, each goes on from where it stopped.
    silent_watches: bool = False
    # Resources (comma-separated, e.g. "persistentvolumeclaims") the client's role may not
    # read: every list, watch or get of them answers 403, as an RBAC denial does.
    forbidden_resources: str = ""
    seed: int = 0
    _rng: random.Random = field(default=None, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _knob_changed: threading.Condition = field(default_factory=threading.Condition, repr=False,
                                               compare=False)

    def __post_init__(self):
        self._rng = random.Random(self.seed)

    def _draw(self, rate: float) -> bool:
        if rate <= 0:
            return False
        with self._lock:
            return self._rng.random() < rate

    def update(self, **knobs) -> dict:
        """Set knobs by name (unknown names are an error); returns all knobs."""
        for name, value in knobs.items():
            if name not in self.knobs():
                raise ValueError(f"unknown fault knob: {name}")
            kind = type(getattr(self, name))
            if kind is str and not isinstance(value, str):
                raise ValueError(f"fault knob {name} takes a string, not {value!r}")
            if kind is bool and not isinstance(value, bool):
                raise ValueError(f"fault knob {name} takes true or false, not {value!r}")
            setattr(self, name, kind(value))
        with self._knob_changed:
            self._knob_changed.notify_all()
        return self.knobs()

    def hold_while_silent(self) -> None:
        """Consulted by a watch before it writes anything: waits while watches are silent."""
        with self._knob_changed:
            self._knob_changed.wait_for(lambda: not self.silent_watches)

    def knobs(self) -> dict:
        return {k: getattr(self, k) for k in _KNOBS}

    def before_bind(self, namespace: str, name: str) -> None:
        """Delay, refuse and/or fail a client's bind, before it touches the pod (admission
        runs before the Binding reaches the pod, so a refused one changes nothing)."""
        if self.bind_delay > 0:
            time.sleep(self.bind_delay)
        refused = {n.strip() for n in self.binding_refused_namespaces.split(",") if n.strip()}
        if namespace in refused or self._draw(self.binding_refusal_rate):
            raise binding_forbidden(namespace, name)
        if self._draw(self.bind_failure_rate):
            if self.bind_failure_code == 409:
                raise ApiError(409, f'Operation cannot be fulfilled on pods/binding "{name}": '
                                    "the object has been modified; please apply your changes "
                                    "to the latest version and try again", "Conflict",
                               {"name": name, "kind": "pods/binding"})
            raise ApiError(self.bind_failure_code, "Internal error occurred: simulated bind "
                                                   "failure", None,
                           {"causes": [{"message": "simulated bind failure"}]})

    def before_update(self, resource: str, name: str) -> None:
        """Fail a client's PUT or PATCH of a pod with a 409 Conflict, as if another writer
        had changed it first (the pod itself is left as it is)."""
        if resource == "pods" and self._draw(self.update_conflict_rate):
            raise ApiError(409, f'Operation cannot be fulfilled on pods "{name}": the object '
                                "has been modified; please apply your changes to the latest "
                                "version and try again", "Conflict",
                           {"name": name, "kind": "pods"})

    def before_read(self, resource: str, verb: str, namespace: str = "") -> None:
        """Refuse a list, watch or get of a resource the role is not granted (403)."""
        if resource in {r.strip() for r in self.forbidden_resources.split(",")}:
            raise rbac_forbidden(resource, verb, namespace)

    def lose_event(self) -> bool:
        """Consulted by the store for every write."""
        return self._draw(self.lose_event_rate)


_KNOBS = ("bind_failure_rate", "bind_failure_code", "bind_delay", "binding_refusal_rate",
          "binding_refused_namespaces", "lose_event_rate", "update_conflict_rate",
          "silent_watches", "forbidden_resources")

POLICY = "simcluster-deny-binding"


def binding_forbidden(namespace: str, name: str) -> ApiError:
    """What kube-apiserver answers when a ValidatingAdmissionPolicy denies a pods/binding
    create: 403 Forbidden, the Status shaped as the captured 404 of a binding to a missing
    pod (45-binding-missing-pod-404: resource "pods", details kind "pods"), with the
    policy's denial as the message."""
    return ApiError(403, f'pods "{name}" is forbidden: ValidatingAdmissionPolicy '
                         f"'{POLICY}' with binding '{POLICY}' denied request: binding pods "
                         f"in namespace {namespace} is not allowed", "Forbidden",
                    {"name": name, "kind": "pods"})


# Whom the denial names: the owner's account as deploy/base/rbac.yaml makes it.
USER = "system:serviceaccount:schedview:schedview-owner"


def rbac_forbidden(resource: str, verb: str, namespace: str = "") -> ApiError:
    """kube-apiserver's answer to a request RBAC does not allow: 403 Forbidden, in its
    authorizer's words. The captures hold no 403 (their client was an admin), so the Status
    is shaped as the captured 404 (60-error-get-missing-pod-404: kind, apiVersion, empty
    metadata, Failure, message, reason, details.kind, code), with the denial's message."""
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    return ApiError(403, f'{resource} is forbidden: User "{USER}" cannot {verb} resource '
                         f'"{resource}" in API group "" {scope}', "Forbidden",
                    {"kind": resource})
