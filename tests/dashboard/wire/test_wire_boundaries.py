"""What the processes exchange is named in wire/ alone, and the web and the workers ask
the owner through dashboard/clients/owner_client.py alone: checked in the source, so that a new
key or a new sender elsewhere fails here rather than drifting."""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SOURCES = [path for package in ("dashboard", "bench") for path in (ROOT / package).rglob("*.py")
           if path.parent != ROOT / "dashboard" / "wire" and "migrations" not in path.parts]


def strings(tree):
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def test_no_module_outside_wire_names_a_redis_key():
    named = {(str(path.relative_to(ROOT)), value)
             for path in SOURCES for value in strings(ast.parse(path.read_text()))
             if re.fullmatch(r"schedview:[\w:.-]+", value)}
    # a key of the process's own Django cache, which no other process reads
    assert named == {("dashboard/readmodel/health.py", "schedview:health")}


def test_only_the_owner_client_sends_the_owner_commands():
    senders = set()
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            imported = (isinstance(node, ast.ImportFrom)
                        and node.module in ("dashboard.clients.owner_client", "dashboard.wire.requests")
                        and {a.name for a in node.names} & {"send", "send_many", "RequestClient"})
            called = (isinstance(node, ast.Attribute) and node.attr in ("send", "send_many")
                      and isinstance(node.value, ast.Name) and node.value.id == "owner_client")
            if imported or called:
                senders.add(str(path.relative_to(ROOT)))
    # The benches stand in for the web; the pools' claims are another protocol's requests.
    assert sorted(senders) == ["bench/extender_bench.py", "bench/ui_bench.py",
                               "dashboard/clients/owner_client.py", "dashboard/clients/pools_transport.py"]
