"""A kubeconfig for the simulated cluster, accepted by kubernetes.config.load_kube_config."""

import os
from pathlib import Path

import yaml


def kubeconfig(url: str, name: str = "simcluster", token: str = "simcluster") -> dict:
    """Plain http with a bearer token (the server accepts any token, or none)."""
    return {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": name, "cluster": {"server": url}}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    }


def write_kubeconfig(path, url: str, name: str = "simcluster") -> str:
    """Written whole or not at all (a temporary file renamed into place): other processes
    wait for the file to appear and must never read half of it."""
    path = Path(path)
    partial = path.with_name(f".{path.name}.partial")
    with open(partial, "w") as f:
        yaml.safe_dump(kubeconfig(url, name), f, sort_keys=False)
    os.replace(partial, path)
    return str(path)
