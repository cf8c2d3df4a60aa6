"""The application's packages: .importlinter's root_packages, the one list of them (the
Containerfile copies the same; tests/deploy checks it)."""
import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def app_packages() -> list[str]:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    return config["importlinter"]["root_packages"].split()
