"""The Kubernetes API client every process uses, from one setting.

`SCHEDVIEW_KUBECONFIG` names a kubeconfig (the embedded default writes the
simulated cluster's there); `SCHEDVIEW_IN_CLUSTER=1` uses the pod's service
account instead. Each call builds its own ApiClient: the owner's reflectors
and Celery's worker processes must not share one connection pool across
threads or forks.

In a cluster the kubelet rotates the service account's token (a projected
token lives an hour by default). The kubernetes client's in-cluster loader
re-reads the token file at most a minute after it last read it, through the
Configuration's refresh hook, which every request consults as it adds its
credentials: the reflectors', the Binding task's (whose API lives as long as
its worker) and the pools claimer's (which asks the same Configuration for its
headers), so none of them keeps a token past its rotation.
"""
import orjson
from django.conf import settings
from kubernetes import client, config
from kubernetes.config.incluster_config import (SERVICE_CERT_FILENAME, SERVICE_TOKEN_FILENAME,
                                                InClusterConfigLoader)

# Where the kubelet mounts the service account (the client's own defaults).
TOKEN_FILE = SERVICE_TOKEN_FILENAME
CA_FILE = SERVICE_CERT_FILENAME


def in_cluster_configuration() -> client.Configuration:
    """The API server from KUBERNETES_SERVICE_HOST/PORT, its CA and the service account's
    token, re-read after rotation (try_refresh_token)."""
    configuration = client.Configuration()
    InClusterConfigLoader(token_filename=TOKEN_FILE, cert_filename=CA_FILE,
                          try_refresh_token=True).load_and_set(configuration)
    return configuration


def api_client() -> client.ApiClient:
    if settings.SCHEDVIEW_IN_CLUSTER:
        configuration = in_cluster_configuration()
    else:
        configuration = client.Configuration()
        config.load_kube_config(config_file=str(settings.SCHEDVIEW_KUBECONFIG),
                                client_configuration=configuration)
    return client.ApiClient(configuration)


def core_api() -> client.CoreV1Api:
    return client.CoreV1Api(api_client())


def read_json(response):
    """The parsed body of a `_preload_content=False` response (the client's model classes
    cost about a millisecond a pod), its connection handed back to the pool."""
    try:
        return orjson.loads(response.read())
    finally:
        response.release_conn()
