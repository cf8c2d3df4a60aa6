"""No image builder runs here, so the Containerfile is checked against the project: what it
copies exists, what it installs is requirements.txt, every role's command the manifests
run is a real entry point of the image, and its collectstatic works with its settings."""
import re
import subprocess
import sys
from pathlib import Path

from tests.deploy.manifests import container, of_kind, rendered
from tests.packages import app_packages

ROOT = Path(__file__).resolve().parents[2]
CONTAINERFILE = (ROOT / "Containerfile").read_text()


def instructions(name: str) -> list[str]:
    """The arguments of every `name` instruction (continuation lines joined)."""
    joined = re.sub(r"\\\n\s*", " ", CONTAINERFILE)
    return [line.split(None, 1)[1] for line in joined.splitlines() if line.startswith(name + " ")]


def image_env() -> dict:
    (env,) = instructions("ENV")
    return dict(pair.split("=", 1) for pair in env.split())


def test_it_installs_requirements_txt_and_copies_what_exists():
    copies = [args.split() for args in instructions("COPY")]
    assert ["requirements.txt", "./"] in copies
    assert any("pip install --no-cache-dir -r requirements.txt" in run
               for run in instructions("RUN"))
    for *sources, _target in copies:
        for source in sources:
            assert (ROOT / source).exists(), source
    copied = {source for *sources, _ in copies for source in sources}
    # The application's packages, and nothing else of the tree but what it serves and runs.
    assert copied == {*app_packages(), "static", "templates", "manage.py", "requirements.txt"}


def test_it_runs_as_a_numeric_non_root_user_with_debug_off():
    (user,) = instructions("USER")
    assert user.isdigit() and int(user) != 0
    assert f"--uid {user}" in CONTAINERFILE
    assert image_env()["DEBUG"] == "0"
    workloads = {**of_kind(rendered("small"), "Deployment"), **of_kind(rendered("small"), "Job")}
    for workload in workloads.values():
        assert workload["spec"]["template"]["spec"]["securityContext"]["runAsUser"] == int(user)


def test_every_role_command_is_an_entry_point_of_the_image():
    from celery.app.utils import find_app
    from django.core.management import get_commands

    from dashboard.celery import app

    commands = get_commands()
    workloads = {**of_kind(rendered("small"), "Deployment"), **of_kind(rendered("small"), "Job")}
    for name, workload in workloads.items():
        argv = container(workload)["command"]
        if argv[:2] == ["python", "manage.py"]:
            assert argv[2] in commands, name
        elif argv[0] == "celery":
            assert argv[1] == "-A" and find_app(argv[2]) is app, name
            assert argv[3] in ("worker", "beat"), name
        else:
            assert argv[0] == "daphne" and argv[-1] == "dashboard.asgi:application", name
    (cmd,) = instructions("CMD")
    assert cmd.startswith('["daphne"') and "dashboard.asgi:application" in cmd


def test_collectstatic_works_as_the_build_runs_it(tmp_path):
    """The build's RUN line, with the image's environment, into a scratch var dir."""
    (build,) = [run for run in instructions("RUN") if "collectstatic" in run]
    env = {"PATH": "/usr/bin:/bin", **image_env(), "SCHEDVIEW_VAR_DIR": str(tmp_path)}
    command = build.split("&&")[0].replace("python", sys.executable, 1)
    subprocess.run(["sh", "-c", command], cwd=ROOT, env=env, check=True,
                   capture_output=True, timeout=120)
    assert (tmp_path / "static" / "schedview.css").exists()
    assert (tmp_path / "static" / "htmx").exists() or any((tmp_path / "static").iterdir())
