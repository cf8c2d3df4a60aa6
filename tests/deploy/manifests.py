"""The rendered manifests of deploy/, for the tests that read them."""
import functools
import shutil
import subprocess
from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
OVERLAYS = ("small", "large")


@functools.cache
def rendered(overlay: str) -> tuple[dict, ...]:
    """`kubectl kustomize deploy/overlays/<overlay>`, as objects."""
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl (with its built-in kustomize) is needed to render deploy/"
    out = subprocess.run([kubectl, "kustomize", str(DEPLOY / "overlays" / overlay)],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    return tuple(yaml.safe_load_all(out))


def of_kind(objects, kind: str) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def container(workload: dict) -> dict:
    (only,) = workload["spec"]["template"]["spec"]["containers"]
    return only


def configmap_env(objects) -> dict[str, str]:
    (config,) = of_kind(objects, "ConfigMap").values()
    return config["data"]
