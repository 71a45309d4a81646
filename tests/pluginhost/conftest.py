"""Fixtures for the plugin host: a real Node process, and small packages written to tmp_path."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from catalogue.manifest import Manifest, load_package
from pluginhost.callbacks import InMemoryCallbacks
from pluginhost.host import NodeHost

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def host() -> Iterator[NodeHost]:
    """One Node host shared by a test module, like a worker's."""
    instance = NodeHost(grace=1.0)
    instance.start()
    yield instance
    instance.stop()


@pytest.fixture
def fresh_host() -> Iterator[NodeHost]:
    """A host of its own, for tests that kill or crash it."""
    instance = NodeHost(grace=0.5, memory_mb=64)
    instance.start()
    yield instance
    instance.stop()


@pytest.fixture
def callbacks() -> InMemoryCallbacks:
    return InMemoryCallbacks()


MakePackage = Callable[..., Manifest]


@pytest.fixture
def make_package(tmp_path: Path) -> MakePackage:
    """Write a package (PLUGIN.md frontmatter + files) and return its validated Manifest."""
    counter = {"n": 0}

    def make(
        frontmatter: str, files: dict[str, str], *, name: str | None = None, body: str = "Prompt.\n"
    ) -> Manifest:
        counter["n"] += 1
        package_id = name or f"pkg{counter['n']}"
        root = tmp_path / package_id
        root.mkdir()
        head = f"id: {package_id}\nversion: 0.1.0\ndescription: A test package.\n"
        (root / "PLUGIN.md").write_text(
            f"---\n{head}{textwrap.dedent(frontmatter).strip()}\n---\n{body}", encoding="utf-8"
        )
        for rel, text in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text), encoding="utf-8")
        result = load_package(str(root))
        assert result.ok, [str(issue) for issue in result.errors]
        return result.manifest

    return make
