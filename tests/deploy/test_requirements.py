"""requirements.txt's sections: whatever the application imports is installed with the run
time's packages (pinned there, or required by one pinned there), never only for the tests."""
import ast
import importlib.metadata
import re
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.packages import app_packages

ROOT = Path(__file__).resolve().parents[2]
APPLICATION = (*app_packages(), "manage.py")


def sections() -> dict[str, set[str]]:
    """Section title ("Run time", "Test time") -> the canonical names it pins."""
    found, title = {}, None
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        heading = re.fullmatch(r"# (\w+ time)", line.strip())
        if heading:
            title = heading.group(1)
            found[title] = set()
        elif line.strip() and not line.startswith("#"):
            found[title].add(canonicalize_name(Requirement(line.split("#")[0]).name))
    return found


def installed_with(names: set[str]) -> set[str]:
    """`names` and every distribution they require, however deep (extras left out)."""
    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for text in importlib.metadata.requires(name) or ():
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(requirement.name))
    return seen


def imported_modules() -> set[str]:
    """Top-level modules the application's code imports."""
    modules = set()
    for top in APPLICATION:
        for path in [ROOT / top] if top.endswith(".py") else (ROOT / top).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    modules.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    modules.add(node.module.split(".")[0])
    return modules - set(sys.stdlib_module_names) - {t.removesuffix(".py") for t in APPLICATION}


def test_the_file_has_a_run_time_and_a_test_time_section():
    assert set(sections()) == {"Run time", "Test time"}


def test_everything_the_application_imports_comes_with_the_run_time_packages():
    run_time = installed_with(sections()["Run time"])
    distributions = importlib.metadata.packages_distributions()
    missing = {module: distributions.get(module) for module in imported_modules()
               if not any(canonicalize_name(d) in run_time
                          for d in distributions.get(module, ()))}
    assert not missing, f"imported at run time, not installed with the run time's packages: " \
                        f"{missing}"

