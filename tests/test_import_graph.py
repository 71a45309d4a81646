"""The imports of the project run one way (docs/architecture.md).

Every import statement of every module of the project's apps counts: at the top of a file,
inside a function (a late import hides a circle, it does not remove it) and under
`if TYPE_CHECKING:` (a type is a dependency a reader follows too). Read with ast, so nothing
is imported and no Django is needed. Three rules:

- no circle between files;
- no circle between apps (app A imports a module of app B while B, directly or through other
  apps, imports A);
- no app imports `config`, the composition root on top (settings come through django.conf).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The composition root: it may import every app, none may import it.
COMPOSITION_ROOT = "config"


@dataclass(frozen=True)
class Edge:
    source: str  # importing module
    target: str  # imported project module
    path: str  # file of the importing module, relative to the checkout
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line} imports {self.target}"


def project_apps(root: Path = ROOT) -> list[str]:
    """The top-level packages beside manage.py (the tests are not part of the graph)."""
    return sorted(
        p.name for p in root.iterdir() if (p / "__init__.py").is_file() and p.name != "tests"
    )


def project_modules(root: Path = ROOT) -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for app in project_apps(root):
        for path in sorted((root / app).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _project_module(name: str, modules: dict[str, Path]) -> str | None:
    """The project module an imported name lives in (its longest dotted prefix), or None."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def import_edges(root: Path = ROOT) -> list[Edge]:
    modules = project_modules(root)
    edges: list[Edge] = []
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        rel = str(path.relative_to(root))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=rel)):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    origin = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    origin = node.module or ""
                # `from a import b` imports module a.b when there is one, else a name of a.
                names = [
                    origin if alias.name == "*" else f"{origin}.{alias.name}"
                    for alias in node.names
                ]
            for name in names:
                target = _project_module(name, modules)
                if target is not None and target != module:
                    edges.append(Edge(module, target, rel, node.lineno))
    return edges


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, without recursion; the components of more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _describe(component: list[str], edges: list[Edge], key) -> str:  # type: ignore[no-untyped-def]
    members = set(component)
    inside = sorted(
        str(e)
        for e in edges
        if key(e.source) in members and key(e.target) in members and key(e.source) != key(e.target)
    )
    return " <-> ".join(component) + "\n" + "\n".join(f"    {line}" for line in inside)


def file_cycles(edges: list[Edge]) -> list[str]:
    graph: dict[str, set[str]] = defaultdict(set)
    for edge in edges:
        graph[edge.source].add(edge.target)
        graph.setdefault(edge.target, set())
    return [_describe(c, edges, lambda m: m) for c in _strongly_connected(graph)]


def _app(module: str) -> str:
    return module.split(".")[0]


def app_cycles(edges: list[Edge]) -> list[str]:
    graph: dict[str, set[str]] = defaultdict(set)
    for edge in edges:
        if _app(edge.source) != _app(edge.target):
            graph[_app(edge.source)].add(_app(edge.target))
            graph.setdefault(_app(edge.target), set())
    return [_describe(c, edges, _app) for c in _strongly_connected(graph)]


def config_imports(edges: list[Edge]) -> list[str]:
    return sorted(
        str(e)
        for e in edges
        if _app(e.target) == COMPOSITION_ROOT and _app(e.source) != COMPOSITION_ROOT
    )


def test_the_walk_sees_late_and_type_only_imports() -> None:
    """The rules below are only as good as the walk: it finds every kind of import."""
    edges = {(e.source, e.target) for e in import_edges()}
    assert ("config.api", "sessions.api") in edges  # a top-level import
    assert len(project_modules()) > 100


def test_the_cycle_finder_names_every_file_of_a_circle(tmp_path: Path) -> None:
    (tmp_path / "alpha").mkdir()
    (tmp_path / "beta").mkdir()
    (tmp_path / "alpha" / "__init__.py").write_text("")
    (tmp_path / "beta" / "__init__.py").write_text("")
    (tmp_path / "alpha" / "one.py").write_text("def f():\n    from beta.two import g\n")
    (tmp_path / "beta" / "two.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from alpha import one\n"
    )
    (tmp_path / "beta" / "three.py").write_text("from . import two\nimport config.settings\n")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "__init__.py").write_text("")
    (tmp_path / "config" / "settings.py").write_text("")
    edges = import_edges(tmp_path)
    [files] = file_cycles(edges)
    assert files.startswith("alpha.one <-> beta.two")
    assert "alpha/one.py:2 imports beta.two" in files and "beta/two.py:3 imports alpha.one" in files
    [apps] = app_cycles(edges)
    assert apps.startswith("alpha <-> beta")
    assert config_imports(edges) == ["beta/three.py:2 imports config.settings"]


def test_no_file_imports_itself_in_a_circle() -> None:
    cycles = file_cycles(import_edges())
    assert not cycles, "import circles between files:\n" + "\n".join(cycles)


def test_no_app_imports_an_app_that_imports_it() -> None:
    cycles = app_cycles(import_edges())
    assert not cycles, "import circles between apps:\n" + "\n".join(cycles)


def test_no_app_imports_the_composition_root() -> None:
    found = config_imports(import_edges())
    assert not found, "apps importing config/ (use django.conf.settings):\n" + "\n".join(found)
