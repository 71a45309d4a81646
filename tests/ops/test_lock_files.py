"""The lock files pin what pyproject.toml asks for, with hashes, so a fresh clone installs
exactly the releases CI tested (scripts/install.sh installs from them with --require-hashes)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s\\;]+)")


def _pins(lock: str) -> dict[str, tuple[str, int]]:
    """name → (version, number of hashes) for every pinned release in a lock file."""
    pins: dict[str, tuple[str, int]] = {}
    name = None
    for line in (REPO / "requirements" / lock).read_text().splitlines():
        match = PIN.match(line)
        if match:
            name = canonicalize_name(match[1])
            pins[name] = (match[2], 0)
        elif name and line.strip().startswith("--hash=sha256:"):
            version, count = pins[name]
            pins[name] = (version, count + 1)
    return pins


def _wanted(extra: str | None) -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(r) for r in project["dependencies"]]
    if extra:
        wanted += [Requirement(r) for r in project["optional-dependencies"][extra]]
    return wanted


@pytest.mark.parametrize(("lock", "extra"), [("run.lock", None), ("dev.lock", "dev")])
def test_every_dependency_is_pinned_inside_its_range_with_hashes(lock, extra):
    pins = _pins(lock)
    for requirement in _wanted(extra):
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{lock} does not pin {requirement.name}: run scripts/lock.sh"
        version, hashes = pins[name]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"{lock} pins {name}=={version}, outside pyproject's {requirement}: run scripts/lock.sh"
        )
        assert hashes, f"{lock} has no hash for {name}"
    assert all(hashes for _, hashes in pins.values())


def test_the_dev_lock_pins_the_runtime_releases_alike():
    run, dev = _pins("run.lock"), _pins("dev.lock")
    different = {
        n: (v, dev.get(n, ("missing",))[0])
        for n, (v, _) in run.items()
        if dev.get(n, ("",))[0] != v
    }
    assert not different, f"run.lock and dev.lock disagree: {different}"


def test_install_script_installs_from_the_locks_only():
    script = (REPO / "scripts" / "install.sh").read_text()
    assert "--require-hashes" in script
    assert "requirements/dev.lock" in script and "requirements/run.lock" in script
    assert "pip install --quiet -e" not in script
