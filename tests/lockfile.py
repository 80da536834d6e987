"""requirements.lock: the runtime dependencies of pyproject.toml and of its `container` extra,
transitively, pinned to the
versions installed here (those the test suite runs against). The container image installs exactly
these (Dockerfile), and tests/test_dockerfile.py checks the lock against pyproject.toml and the image.

    python tests/lockfile.py        # rewrite requirements.lock from this environment
"""
from __future__ import annotations

import sys
import tomllib
from importlib.metadata import distribution
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
HEADER = ("# The runtime dependencies of pyproject.toml (and its `container` extra), transitively, pinned: what the\n"
          "# container image installs.\n"
          "# Made by `python tests/lockfile.py` from the environment the tests ran in; do not edit by hand.\n")


def project_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["container"]]


def requirements_of(name: str) -> list[Requirement]:
    """The unconditional requirements of an installed distribution (no extras)."""
    found = []
    for text in distribution(name).requires or []:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            found.append(req)
    return found


def installed_closure() -> dict[str, str]:
    """canonical name -> installed version, for pyproject's dependencies and theirs."""
    pinned: dict[str, str] = {}
    todo = project_requirements()
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name not in pinned:
            pinned[name] = distribution(req.name).version
            todo.extend(requirements_of(req.name))
    return pinned


def parse(text: str) -> dict[str, str]:
    """name -> version of a lock's `name==version` lines."""
    pins: dict[str, str] = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = version.strip()
    return pins


def render(pins: dict[str, str]) -> str:
    return HEADER + "".join(f"{name}=={version}\n" for name, version in sorted(pins.items()))


if __name__ == "__main__":
    LOCK.write_text(render(installed_closure()))
    sys.exit(0)
