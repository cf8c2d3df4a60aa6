"""The Kubernetes API client every process uses, from one setting.

`SCHEDVIEW_KUBECONFIG` names a kubeconfig (the embedded default writes the
simulated cluster's there); `SCHEDVIEW_IN_CLUSTER=1` uses the pod's service
account instead. Each call builds its own ApiClient: the owner's reflectors
and Celery's worker processes must not share one connection pool across
threads or forks.
"""
import orjson
from django.conf import settings
from kubernetes import client, config


def api_client() -> client.ApiClient:
    if settings.SCHEDVIEW_IN_CLUSTER:
        configuration = client.Configuration()
        config.load_incluster_config(client_configuration=configuration)
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
