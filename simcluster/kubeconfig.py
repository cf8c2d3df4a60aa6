"""A kubeconfig for the simulated cluster, accepted by kubernetes.config.load_kube_config."""

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
    with open(path, "w") as f:
        yaml.safe_dump(kubeconfig(url, name), f, sort_keys=False)
    return str(path)
