"""Move the tree to the design card's layout: one `dashboard/` app holding every process.

Run from the repository's top on the tree before the move (`python tools/move_tree.py`);
it `git mv`s every file of the table below and rewrites every reference: import
statements (parsed, so `from common import kube` becomes
`from dashboard.kube import client as kube`), dotted module paths in strings and text
(settings, `mock.patch` targets, docs), file paths in text, and the depth of
`Path(__file__).parents[N]` in moved tests. Tests become packages, so a helper module is
imported by its full name (`tests.dashboard.feedhelpers`). Celery task names stay
`worker.tasks.*`: messages already queued carry them. Nothing else changes.
"""
import ast
import io
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path.cwd()

# old path -> new path; a folder moves with everything in it.
MOVES = {
    # the Django project and its tables become the app
    "schedview/settings.py": "dashboard/settings.py",
    "schedview/urls.py": "dashboard/urls.py",
    "schedview/asgi.py": "dashboard/asgi.py",
    "schedview/celery.py": "dashboard/celery.py",
    "schedview/embedded_secret.py": "dashboard/embedded_secret.py",
    "db/models.py": "dashboard/models.py",
    "db/migrations": "dashboard/migrations",
    # every process's entry command, in the app's management/commands
    "owner/management/commands/watch.py": "dashboard/management/commands/watch.py",
    "pools/management/commands/pools.py": "dashboard/management/commands/pools.py",
    "launcher/management/commands/up.py": "dashboard/management/commands/up.py",
    "web/management/commands/apitoken.py": "dashboard/management/commands/apitoken.py",
    "web/management/commands/apitokens.py": "dashboard/management/commands/apitokens.py",
    "web/management/commands/revoketoken.py": "dashboard/management/commands/revoketoken.py",
    # one subpackage per process
    "owner": "dashboard/owner",
    "pools": "dashboard/poolkeeper",
    "worker": "dashboard/worker",
    "standin": "dashboard/standin",
    "launcher": "dashboard/launcher",
    "wire": "dashboard/wire",
    # the web, its pages grouped by what they show
    "web/__init__.py": "dashboard/web/__init__.py",
    "web/api": "dashboard/web/api",
    "web/pools": "dashboard/web/pools",
    "web/statuses": "dashboard/web/statuses",
    "web/query_params.py": "dashboard/web/query_params.py",
    "web/login_form.py": "dashboard/web/login_form.py",
    "web/views.py": "dashboard/web/pages.py",
    "web/live_hub.py": "dashboard/web/live/hub.py",
    "web/consumers.py": "dashboard/web/live/consumers.py",
    "web/body_limit.py": "dashboard/web/middleware/body_limit.py",
    "web/database_down.py": "dashboard/web/middleware/database_down.py",
    "web/pod_views.py": "dashboard/web/pods/views.py",
    "web/pod_query.py": "dashboard/web/pods/query.py",
    "web/pod_history.py": "dashboard/web/pods/history.py",
    "web/pod_spec.py": "dashboard/web/pods/spec.py",
    "web/pod_consumers.py": "dashboard/web/pods/consumers.py",
    "web/actions.py": "dashboard/web/pods/actions.py",
    "web/action_preview.py": "dashboard/web/pods/action_preview.py",
    "web/node_query.py": "dashboard/web/nodes/query.py",
    "web/node_reads.py": "dashboard/web/nodes/reads.py",
    "web/heatmap.py": "dashboard/web/nodes/heatmap.py",
    "web/event_reads.py": "dashboard/web/events/reads.py",
    "web/snapshot_reads.py": "dashboard/web/snapshot/reads.py",
    "web/health_series.py": "dashboard/web/health/series.py",
    "web/health_views.py": "dashboard/web/health/views.py",
    # common/ goes: split by what it is
    "common/kube.py": "dashboard/kube/client.py",
    "common/reflector.py": "dashboard/kube/reflector.py",
    "common/kube_http.py": "dashboard/kube/kube_http.py",
    "common/binding.py": "dashboard/kube/binding.py",
    "common/binding_metrics.py": "dashboard/kube/binding_metrics.py",
    "common/supervisor.py": "dashboard/runtime/supervisor.py",
    "common/supervised.py": "dashboard/runtime/supervised.py",
    "common/probes.py": "dashboard/runtime/probes.py",
    "common/redis_outage.py": "dashboard/runtime/redis_outage.py",
    "common/redis_urls.py": "dashboard/runtime/redis_urls.py",
    "common/embedded_redis.py": "dashboard/runtime/embedded_redis.py",
    "common/read_model.py": "dashboard/readmodel/read_model.py",
    "common/health.py": "dashboard/readmodel/health.py",
    "common/owner_client.py": "dashboard/clients/owner_client.py",
    "common/pools_transport.py": "dashboard/clients/pools_transport.py",
    # tests mirror the packages
    "tests/api": "tests/dashboard/web/api",
    "tests/wire": "tests/dashboard/wire",
    "tests/pages/conftest.py": "tests/dashboard/web/conftest.py",
    "tests/pages/nodepages.py": "tests/dashboard/web/nodes/nodepages.py",
    "tests/pages/podpages.py": "tests/dashboard/web/pods/podpages.py",
    "tests/pages/test_events.py": "tests/dashboard/web/events/test_events.py",
    "tests/pages/test_events_live.py": "tests/dashboard/web/events/test_events_live.py",
    "tests/pages/test_live_hub.py": "tests/dashboard/web/live/test_live_hub.py",
    "tests/pages/test_node_table_and_heatmap.py":
        "tests/dashboard/web/nodes/test_node_table_and_heatmap.py",
    "tests/pages/test_nodes.py": "tests/dashboard/web/nodes/test_nodes.py",
    "tests/pages/test_nodes_live.py": "tests/dashboard/web/nodes/test_nodes_live.py",
    "tests/pages/test_overview_binds.py": "tests/dashboard/web/overview/test_overview_binds.py",
    "tests/pages/test_overview_processes.py":
        "tests/dashboard/web/overview/test_overview_processes.py",
    "tests/pages/test_overview_queries.py":
        "tests/dashboard/web/overview/test_overview_queries.py",
    "tests/pages/test_pod_spec.py": "tests/dashboard/web/pods/test_pod_spec.py",
    "tests/pages/test_pods_actions.py": "tests/dashboard/web/pods/test_pods_actions.py",
    "tests/pages/test_pods_live.py": "tests/dashboard/web/pods/test_pods_live.py",
    "tests/pages/test_pods_preview.py": "tests/dashboard/web/pods/test_pods_preview.py",
    "tests/pages/test_pods_query.py": "tests/dashboard/web/pods/test_pods_query.py",
    "tests/pages/test_pods_views.py": "tests/dashboard/web/pods/test_pods_views.py",
    "tests/pages/test_snapshot_page.py": "tests/dashboard/web/snapshot/test_snapshot_page.py",
    "tests/pages/test_statuses_page.py": "tests/dashboard/web/statuses/test_statuses_page.py",
    "tests/pages/test_zones.py": "tests/dashboard/web/zones/test_zones.py",
    "tests/dashboard/processes.py": "tests/dashboard/runtime/processes.py",
    "tests/dashboard/test_access.py": "tests/dashboard/launcher/test_access.py",
    "tests/dashboard/test_channel_layer.py": "tests/dashboard/runtime/test_channel_layer.py",
    "tests/dashboard/test_health.py": "tests/dashboard/readmodel/test_health.py",
    "tests/dashboard/test_health_web.py": "tests/dashboard/web/health/test_health_web.py",
    "tests/dashboard/test_history_retention.py":
        "tests/dashboard/worker/test_history_retention.py",
    "tests/dashboard/test_kube_in_cluster.py": "tests/dashboard/kube/test_kube_in_cluster.py",
    "tests/dashboard/test_live_overview.py": "tests/dashboard/web/overview/test_live_overview.py",
    "tests/dashboard/test_pages.py": "tests/dashboard/web/test_pages.py",
    "tests/dashboard/test_redis_urls.py": "tests/dashboard/runtime/test_redis_urls.py",
    "tests/dashboard/test_supervisor.py": "tests/dashboard/runtime/test_supervisor.py",
    "tests/dashboard/test_up_command.py": "tests/dashboard/launcher/test_up_command.py",
    "tests/extender/fake_extender.py": "tests/dashboard/standin/fake_extender.py",
    "tests/extender/test_extender_standin.py": "tests/dashboard/standin/test_standin.py",
    "tests/extender/test_extender_standin_queue.py":
        "tests/dashboard/standin/test_standin_queue.py",
    "tests/extender/test_demo_scenes.py": "tests/dashboard/launcher/test_demo_scenes.py",
    "tests/extender": "tests/dashboard/owner/extender",
    "tests/feed/conftest.py": "tests/dashboard/conftest.py",
    "tests/feed/feedhelpers.py": "tests/dashboard/feedhelpers.py",
    "tests/feed/test_actions.py": "tests/dashboard/web/pods/test_actions.py",
    "tests/feed/test_reflector.py": "tests/dashboard/kube/test_reflector.py",
    "tests/feed/test_tasks.py": "tests/dashboard/worker/test_tasks.py",
    "tests/feed": "tests/dashboard/owner",
    "tests/warmpool/test_pools_web.py": "tests/dashboard/web/pools/test_pools_web.py",
    "tests/warmpool/test_pools_on_cluster.py":
        "tests/dashboard/poolkeeper/test_pools_on_cluster.py",
}
# Folders emptied by the move: their __init__.py and docstrings go with them.
DROPPED = ["schedview/__init__.py", "db/__init__.py", "db/apps.py", "common/__init__.py",
           "owner/management/__init__.py", "owner/management/commands/__init__.py",
           "pools/management/__init__.py", "pools/management/commands/__init__.py",
           "launcher/management/__init__.py", "launcher/management/commands/__init__.py",
           "web/management/__init__.py", "web/management/commands/__init__.py",
           "tests/warmpool/conftest.py"]
# Celery task names stay as queued messages carry them.
TASK_NAMES = re.compile(r"worker\.tasks\.(bind_pod|bind_pods|reap|compare|prune_history|"
                        r"sample_health|schedule_pending)\b")
TEXT_SUFFIXES = {".py", ".md", ".ini", ".toml", ".cfg", ".yaml", ".yml", ".txt", ".html",
                 ".json", ".sh", ".rules", ""}
SKIP_DIRS = {".git", ".venv", "var", "node_modules", "__pycache__", "static"}


def git(*args):
    subprocess.run(["git", *args], check=True)


def tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], check=True, capture_output=True, text=True)
    return out.stdout.split()


def plan(files: list[str]) -> dict[str, str]:
    """Each tracked file's new path (files that stay are absent)."""
    moved = {}
    for f in files:
        for old in sorted(MOVES, key=len, reverse=True):
            if f == old or f.startswith(old + "/"):
                moved[f] = MOVES[old] + f[len(old):]
                break
    return moved


def module(path: str) -> str | None:
    if not path.endswith(".py"):
        return None
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def module_map(moved: dict[str, str], files: list[str]) -> dict[str, str]:
    """old dotted module -> new dotted module, packages included; test helpers by their
    bare name too (today each test folder is on sys.path)."""
    mapping = {}
    for old, new in moved.items():
        o, n = module(old), module(new)
        if o and n:
            mapping[o] = n
            if old.startswith("tests/") and "__init__" not in old:
                mapping.setdefault("@" + o.rsplit(".", 1)[1], n)
    for f in files:   # test modules that stay keep their folder but become packages' modules
        if f.startswith("tests/") and f.endswith(".py") and f not in moved:
            mapping.setdefault("@" + module(f).rsplit(".", 1)[1], module(f))
    packages = {}
    for o, n in mapping.items():   # the folders themselves
        if o.startswith("@"):
            continue
        op, np_ = o.rsplit(".", 1)[0] if "." in o else "", n.rsplit(".", 1)[0]
        while op and np_ and op not in mapping and op.split(".")[-1] == np_.split(".")[-1]:
            packages[op] = np_
            op, np_ = (op.rsplit(".", 1)[0] if "." in op else ""), np_.rsplit(".", 1)[0]
    for old_top, new_top in (("owner", "dashboard.owner"), ("pools", "dashboard.poolkeeper"),
                             ("worker", "dashboard.worker"), ("standin", "dashboard.standin"),
                             ("launcher", "dashboard.launcher"), ("wire", "dashboard.wire"),
                             ("web", "dashboard.web"), ("db", "dashboard"),
                             ("schedview", "dashboard")):
        packages.setdefault(old_top, new_top)
    return {**packages, **mapping}


def rewrite_imports(source: str, mapping: dict[str, str]) -> str:
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits = []

    def target(name: str) -> str | None:
        if name in mapping and not name.startswith("@"):
            return mapping[name]
        if "." not in name and "@" + name in mapping:
            return mapping["@" + name]
        for old in sorted((m for m in mapping if not m.startswith("@")), key=len, reverse=True):
            if name.startswith(old + "."):
                return mapping[old] + name[len(old):]
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            base = target(node.module)
            groups = {}
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                sub = mapping.get(full)
                if sub:   # a module imported from its package
                    parent, leaf = sub.rsplit(".", 1)
                    local = alias.asname or alias.name
                    groups.setdefault(parent, []).append(
                        leaf if leaf == local else f"{leaf} as {local}")
                else:
                    name = alias.name + (f" as {alias.asname}" if alias.asname else "")
                    groups.setdefault(base or node.module, []).append(name)
            if base is None and list(groups) == [node.module]:
                continue
            edits.append((node, [f"from {mod} import {', '.join(names)}"
                                 for mod, names in groups.items()]))
        elif isinstance(node, ast.Import):
            new_names, changed = [], False
            for alias in node.names:
                t = target(alias.name)
                if t and not alias.asname and "." in alias.name:
                    new_names.append(t)   # its uses, `a.b.x`, are rewritten with the text
                    changed = True
                elif t:
                    new_names.append(f"{t} as {alias.asname or alias.name}")
                    changed = True
                else:
                    new_names.append(alias.name + (f" as {alias.asname}" if alias.asname else ""))
            if changed:
                edits.append((node, [f"import {n}" for n in new_names]))
    for node, statements in sorted(edits, key=lambda e: e[0].lineno, reverse=True):
        first, last = node.lineno - 1, node.end_lineno - 1
        indent = re.match(r"\s*", lines[first]).group(0)
        tail = lines[last][len(lines[last].rstrip("\n").rstrip()):].rstrip("\n")
        comment = ""
        m = re.search(r"\)?(\s*#.*)$", lines[last].rstrip("\n"))
        if m and "#" in m.group(1):
            comment = "  " + m.group(1).strip()
        text = "".join(f"{indent}{s}\n" for s in statements)
        if comment:
            text = text[:-1] + comment + "\n"
        del tail
        lines[first:last + 1] = [text]
    return "".join(lines)


def dotted_pattern(mapping: dict[str, str]):
    olds = sorted((m for m in mapping if not m.startswith("@") and "." in m), key=len,
                  reverse=True)
    return re.compile(r"(?<![\w./-])(" + "|".join(re.escape(o) for o in olds) + r")(?![\w])")


def rewrite_text(text: str, mapping: dict[str, str], paths: dict[str, str]) -> str:
    kept = {}

    def keep(m):
        kept[f"\0{len(kept)}\0"] = m.group(0)
        return f"\0{len(kept) - 1}\0"
    text = TASK_NAMES.sub(keep, text)
    text = dotted_pattern(mapping).sub(lambda m: mapping[m.group(1)], text)
    for key, value in kept.items():
        text = text.replace(key, value)
    if paths:   # only a path that names a file or folder of the old tree: "pools/a" is a pod
        text = PATH_TOKEN.sub(lambda m: paths.get(m.group(1).rstrip("/"), m.group(1).rstrip("/"))
                              + ("/" if m.group(1).endswith("/") else ""), text)
    text = text.replace("-A schedview", "-A dashboard").replace('"-A", "schedview"',
                                                                '"-A", "dashboard"')
    return text


def rewrite_python_text(source: str, mapping: dict[str, str], paths: dict[str, str]) -> str:
    """Only strings and comments: in code, `owner.status` may be an attribute of a
    variable called owner, and import statements were rewritten already. Dotted names in
    code (`dashboard.settings.__file__` after `import dashboard.settings`) are the
    exception: a module path followed by an attribute."""
    out = []
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    last = 0
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    for tok in tokens:
        if tok.type not in (tokenize.STRING, tokenize.COMMENT):
            continue
        start = offsets[tok.start[0] - 1] + tok.start[1]
        end = offsets[tok.end[0] - 1] + tok.end[1]
        out.append(source[last:start])
        out.append(rewrite_text(source[start:end], mapping, paths))
        last = end
    out.append(source[last:])
    text = "".join(out)
    return text.replace("schedview.settings.", "dashboard.settings.").replace(
        '"-A", "schedview"', '"-A", "dashboard"')


PATH_TOKEN = re.compile(r"(?<![\w./-])([a-z_]+(?:/[\w.-]*\w)+/?)")


def path_map(moved: dict[str, str]) -> dict[str, str]:
    """Paths of the old tree that tests do not own, files and folders, to their new place."""
    paths = {}
    for old, new in moved.items():
        if old.startswith("tests/"):
            continue
        paths[old] = new
        o, n = old.rsplit("/", 1)[0], new.rsplit("/", 1)[0]
        while "/" in o and o.rsplit("/", 1)[1] == n.rsplit("/", 1)[1]:
            paths.setdefault(o, n)
            o, n = o.rsplit("/", 1)[0], n.rsplit("/", 1)[0]
        if o.split("/")[-1] == n.split("/")[-1]:
            paths.setdefault(o, n)
    return paths


def fix_depth(text: str, old: str, new: str) -> str:
    delta = new.count("/") - old.count("/")
    if not delta:
        return text
    old_depth = old.count("/")

    def parents(m):
        n = int(m.group(1))
        return f".parents[{n + delta}]" if n == old_depth else m.group(0)
    return re.sub(r"\.parents\[(\d+)\]", parents, text)


APP_INIT = '''"""schedview's Django app, `dashboard`: the project's settings, urls, asgi and Celery app,
the tables, every process's entry command (management/commands) and one subpackage per
process, with what several of them share beside them (kube, runtime, readmodel, clients)
and what they say to each other (wire). Nothing is imported here, so that Django-free
subpackages (wire) stay Django-free."""
'''
APP_CONFIG = '''"""The app, labelled "dashboard": the label names the tables (dashboard_podrecord), the
migrations' history and the permission dashboard.act_on_pods."""
from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    label = "dashboard"
'''
# Edits that make the moved tree run: (file, old text, new text), each found exactly once.
FIXUPS = [
    ("dashboard/settings.py", '''    "db",        # the tables (label "dashboard")
    "web",
    "owner",     # manage.py watch
    "pools",     # manage.py pools
    "worker",    # the Celery tasks (autodiscovered from installed apps)
    "launcher",  # manage.py up
''', '''    "dashboard",   # the app: tables, pages, every process's command
'''),
    ("dashboard/celery.py", 'app.autodiscover_tasks()\n',
     'app.autodiscover_tasks(["dashboard.worker"])\n'),
    ("Containerfile", '''COPY common ./common
COPY db ./db
COPY launcher ./launcher
COPY owner ./owner
COPY pools ./pools
COPY schedview ./schedview
COPY standin ./standin
COPY web ./web
COPY worker ./worker
COPY schedcache ./schedcache
COPY scheduling ./scheduling
COPY simcluster ./simcluster
COPY warmpool ./warmpool
COPY wire ./wire
''', '''COPY dashboard ./dashboard
COPY schedcache ./schedcache
COPY scheduling ./scheduling
COPY simcluster ./simcluster
COPY warmpool ./warmpool
'''),
    ("tests/deploy/test_requirements.py", '''APPLICATION = ("common", "db", "launcher", "owner", "pools", "schedview", "standin", "web",
               "worker", "wire", "schedcache", "scheduling", "simcluster", "warmpool", "manage.py")''',
     '''APPLICATION = ("dashboard", "schedcache", "scheduling", "simcluster", "warmpool", "manage.py")'''),
    ("tests/deploy/test_rbac.py", '''SOURCES = ("common", "db", "launcher", "owner", "pools", "schedview", "standin", "web", "worker",
           "warmpool", "wire")''', '''SOURCES = ("dashboard", "warmpool")'''),
    ("tests/deploy/test_containerfile.py", '''    for package in ("common", "db", "launcher", "owner", "pools", "schedview", "standin", "web",
                    "worker", "schedcache", "scheduling", "simcluster", "warmpool", "wire",
                    "static", "templates", "manage.py"):''',
     '''    for package in ("dashboard", "schedcache", "scheduling", "simcluster", "warmpool",
                    "static", "templates", "manage.py"):'''),
    ("tests/dashboard/wire/test_wire_boundaries.py", '''SOURCES = [path for package in ("common", "db", "launcher", "owner", "pools", "schedview",
                                "standin", "web", "worker",
                                "bench") for path in (ROOT / package).rglob("*.py")''',
     '''SOURCES = [path for package in ("dashboard", "bench") for path in (ROOT / package).rglob("*.py")
           if path.parent != ROOT / "dashboard" / "wire"'''),
    ("tests/dashboard/wire/test_wire_boundaries.py", '''.rglob("*.py")
           if path.parent != ROOT / "dashboard" / "wire"
           if "migrations" not in path.parts]''', '''.rglob("*.py")
           if path.parent != ROOT / "dashboard" / "wire" and "migrations" not in path.parts]'''),
    ("tests/security/test_headers.py", '''/ "schedview" / "settings.py"''',
     '''/ "dashboard" / "settings.py"'''),
    ("tests/dashboard/wire/test_wire_shapes.py", '''f"import sys; from wire import {modules}; "
                               "print(sorted(m for m in sys.modules "
                               "if m.split('.')[0] in ('django', 'common', 'db', 'launcher', 'owner', 'pools', 'schedview', 'standin', 'web', 'worker', 'channels')))"]''',
     '''f"import sys; from dashboard.wire import {modules}; "
                               "print(sorted(m for m in sys.modules "
                               "if m.split('.')[0] in ('django', 'channels') or "
                               "m.startswith('dashboard.') and not m.startswith('dashboard.wire')))"]'''),
]


def fixups():
    (ROOT / "dashboard/__init__.py").write_text(APP_INIT)
    (ROOT / "dashboard/apps.py").write_text(APP_CONFIG)
    for f, old, new in FIXUPS:
        p = ROOT / f
        text = p.read_text()
        assert text.count(old) == 1, (f, old)
        p.write_text(text.replace(old, new))


ISORT = """line-length = 100
[lint.isort]
known-first-party = ["schedcache", "scheduling", "warmpool", "simcluster"]
known-local-folder = ["dashboard", "tests"]
combine-as-imports = true
"""


def sort_imports(files: list[str]):
    """The rewritten import blocks in the project's order (standard library, third party,
    the libraries, the app), by ruff's isort (RUFF names its binary)."""
    config = ROOT / ".git" / "move-ruff.toml"
    config.write_text(ISORT)
    subprocess.run([os.environ.get("RUFF", "ruff"), "check", "--config", str(config),
                    "--select", "I", "--fix", "--quiet", *files], check=False)
    config.unlink()


def main():
    files = [f for f in tracked() if f not in DROPPED]
    moved = plan(files)
    mapping = module_map(moved, files)
    paths = path_map(moved)
    for f in DROPPED:
        git("rm", "-q", f)
    for old, new in moved.items():
        (ROOT / new).parent.mkdir(parents=True, exist_ok=True)
        git("mv", old, new)
    # every package gets its __init__.py; tests become packages
    for f in tracked():
        if f.endswith(".py") and (f.startswith("dashboard/") or f.startswith("tests/")):
            d = (ROOT / f).parent
            while d != ROOT and not (d / "__init__.py").exists():
                (d / "__init__.py").write_text("")
                git("add", str((d / "__init__.py").relative_to(ROOT)))
                d = d.parent
    new_of = {new: old for old, new in moved.items()}
    rewritten = []
    for f in tracked():
        p = ROOT / f
        if f == "tools/move_tree.py":
            continue
        if any(part in SKIP_DIRS for part in p.parts) or p.suffix not in TEXT_SUFFIXES:
            continue
        if p.suffix == "" and p.name not in ("Containerfile", "Makefile", "run"):
            continue
        text = p.read_text()
        new = text
        if p.suffix == ".py":
            new = rewrite_imports(new, mapping)
            if new != text:
                rewritten.append(f)
            if f in new_of and f.startswith("tests/"):
                new = fix_depth(new, new_of[f], f)
        if p.suffix == ".py":
            new = rewrite_python_text(new, mapping, paths)
        else:
            new = rewrite_text(new, mapping, paths)
        if new != text:
            p.write_text(new)
    fixups()
    sort_imports(rewritten)
    git("add", "-A", ".")
    for d in sorted((d for d in ROOT.rglob("*") if d.is_dir() and ".git" not in d.parts),
                    key=lambda d: len(d.parts), reverse=True):
        if not any(d.iterdir()):
            d.rmdir()


if __name__ == "__main__":
    sys.exit(main())
