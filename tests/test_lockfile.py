"""requirements.lock, which the container image installs: it pins every runtime dependency of
pyproject.toml (tests/lockfile.py makes it; tests/test_dockerfile.py checks the image against it)."""
from __future__ import annotations

import re

from lockfile import LOCK, installed_closure, parse, project_requirements, requirements_of


def test_the_lock_pins_every_runtime_dependency() -> None:
    """requirements.lock: sorted `name==version` lines, every dependency of pyproject.toml in it at a
    version its specifier allows, and closed under the requirements of what is installed here at the
    locked version (for the others this environment has no metadata of the locked version)."""
    text = LOCK.read_text()
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    names = [line.partition("==")[0] for line in lines]
    assert names == sorted(names) and all(re.fullmatch(r"[a-z0-9-]+==[\w.]+", line) for line in lines), lines
    pins = parse(text)
    assert len(pins) == len(lines), "a name twice"
    for req in project_requirements():
        name = req.name.lower().replace("_", "-")
        assert name in pins and req.specifier.contains(pins[name], prereleases=True), (str(req), pins.get(name))
    installed = installed_closure()
    same = [name for name, version in pins.items() if installed.get(name) == version]
    assert len(same) >= len(pins) // 2, "the lock is far from this environment: run python tests/lockfile.py"
    for name in same:
        for req in requirements_of(name):
            locked = pins.get(req.name.lower().replace("_", "-"))
            assert locked is not None and req.specifier.contains(locked, prereleases=True), (name, str(req), locked)
