"""deploy/ renders with kustomize, validates against Kubernetes 1.36's schemas offline, and
wires the roles as the code expects them."""
import kubernetes_validate
import pytest

from tests.deploy.manifests import OVERLAYS, configmap_env, container, of_kind, rendered

# kube-scheduler and kube-apiserver of the captures are v1.36.2; kubernetes-validate
# 1.37.0 ships schemas up to 1.37.0, the newest of the 1.36 line being 1.36.0.
KUBERNETES = "1.36.0"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_rendered_object_validates_strictly_against_kubernetes_1_36(overlay):
    objects = rendered(overlay)
    assert len(objects) > 10
    for obj in objects:
        validated = kubernetes_validate.validate(obj, KUBERNETES, strict=True)
        assert validated == "1.36", (obj["kind"], validated)


def test_strict_validation_refuses_a_misspelt_field():
    """The check above can fail: strict schemas refuse fields Kubernetes does not know."""
    web = of_kind(rendered("small"), "Deployment")["schedview-web"]
    broken = {**web, "spec": {**web["spec"], "replica": 2}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES, strict=True)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_role_runs_its_command_as_a_non_root_user_with_a_read_only_root(overlay):
    objects = rendered(overlay)
    workloads = {**of_kind(objects, "Deployment"), **of_kind(objects, "Job")}
    commands = {name: container(w)["command"] for name, w in workloads.items()}
    assert commands == {
        "schedview-owner": ["python", "manage.py", "watch"],
        "schedview-web": ["daphne", "-b", "0.0.0.0", "-p", "8000",
                          "dashboard.asgi:application"],
        "schedview-worker": ["celery", "-A", "dashboard", "worker", "--loglevel", "INFO"],
        "schedview-beat": ["celery", "-A", "dashboard", "beat", "--schedule",
                           "/tmp/celerybeat-schedule", "--loglevel", "INFO"],
        "schedview-pools": ["python", "manage.py", "pools"],
        "schedview-migrate": ["python", "manage.py", "migrate", "--noinput"],
    }
    for name, workload in workloads.items():
        pod = workload["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert container(workload)["securityContext"]["readOnlyRootFilesystem"] is True, name
        assert [source for source in container(workload)["envFrom"]] == [
            {"configMapRef": {"name": configmap_name(objects)}},
            {"secretRef": {"name": "schedview"}}], name
        assert container(workload)["resources"]["requests"].keys() == {"cpu", "memory"}, name


def configmap_name(objects) -> str:
    (name,) = of_kind(objects, "ConfigMap")
    return name


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_probes_use_the_shared_probe_paths_and_port(overlay):
    objects = rendered(overlay)
    deployments = of_kind(objects, "Deployment")
    probe_port = int(configmap_env(objects)["SCHEDVIEW_PROBE_ADDRESS"].rpartition(":")[2])
    for name, port in (("schedview-owner", probe_port), ("schedview-pools", probe_port),
                       ("schedview-web", 8000)):
        spec = container(deployments[name])
        ports = {p["name"]: p["containerPort"] for p in spec["ports"]}
        for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
            check = spec[probe]["httpGet"]
            assert (check["path"], ports[check["port"]]) == (path, port), (name, probe)
    ping = container(deployments["schedview-worker"])["livenessProbe"]["exec"]["command"]
    assert ping == ["sh", "-c", "celery -A dashboard inspect ping -d celery@$HOSTNAME"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_extender_service_selects_the_owners_on_the_listener_port(overlay):
    objects = rendered(overlay)
    owner = of_kind(objects, "Deployment")["schedview-owner"]
    service = of_kind(objects, "Service")["schedview-extender"]
    labels = owner["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"].get("publishNotReadyAddresses", False) is False  # the leader only
    listen = int(configmap_env(objects)["SCHEDVIEW_EXTENDER_ADDRESS"].rpartition(":")[2])
    ports = {p["name"]: p["containerPort"] for p in container(owner)["ports"]}
    (port,) = service["spec"]["ports"]
    assert ports[port["targetPort"]] == listen
    assert owner["spec"]["replicas"] == 2


def test_the_large_overlay_scales_by_replicas_and_sizes():
    small, large = (of_kind(rendered(o), "Deployment") for o in OVERLAYS)
    for name in ("schedview-web", "schedview-worker"):
        assert large[name]["spec"]["replicas"] > small[name]["spec"]["replicas"] >= 2
    assert [d["spec"]["replicas"] for d in (large["schedview-beat"], small["schedview-beat"])] \
        == [1, 1]
    owner_memory = [container(d["schedview-owner"])["resources"]["requests"]["memory"]
                    for d in (small, large)]
    assert owner_memory == ["512Mi", "2Gi"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_config_is_a_configmap_and_a_secret_and_neither_database_nor_redis_is_bundled(overlay):
    objects = rendered(overlay)
    env = configmap_env(objects)
    assert not {"SECRET_KEY", "DATABASE_URL", "REDIS_URL"} & env.keys()
    assert env["DEBUG"] == "0" and env["SCHEDVIEW_IN_CLUSTER"] == "1"
    assert not of_kind(objects, "Secret")     # the operator's (README, "Deploy")
    assert not of_kind(objects, "StatefulSet")
    images = {container(w)["image"] for w in of_kind(objects, "Deployment").values()}
    assert images == {"ghcr.io/schedview/schedview:latest"}


def test_the_kube_scheduler_configuration_calls_the_extender_service_over_tls():
    """The captured kube-scheduler's configuration (k8s-wire/extender/scheduler-config-A-
    nodecache.yaml), on our Service, over HTTPS with a client certificate; no prioritize
    verb, since the extender serves filter, bind and preempt."""
    import yaml
    from urllib.parse import urlsplit

    from tests.deploy.manifests import DEPLOY

    config = yaml.safe_load((DEPLOY / "kube-scheduler" / "scheduler-config.yaml").read_text())
    assert (config["apiVersion"], config["kind"]) == ("kubescheduler.config.k8s.io/v1",
                                                      "KubeSchedulerConfiguration")
    (extender,) = config["extenders"]
    assert {key: extender[key] for key in ("filterVerb", "bindVerb", "preemptVerb",
                                            "nodeCacheCapable", "httpTimeout")} == {
        "filterVerb": "filter", "bindVerb": "bind", "preemptVerb": "preempt",
        "nodeCacheCapable": True, "httpTimeout": "5s"}
    assert "prioritizeVerb" not in extender
    url = urlsplit(extender["urlPrefix"])
    service = of_kind(rendered("small"), "Service")["schedview-extender"]
    assert (url.scheme, url.hostname, url.port, url.path) == (
        "https", f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc",
        service["spec"]["ports"][0]["port"], "/extender")
    assert extender["tlsConfig"].keys() >= {"caFile", "certFile", "keyFile"}
