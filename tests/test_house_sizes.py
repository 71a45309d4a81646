"""No piece of the house too large to hold in one's head (issue #26, the developer guide): no
source file over 1,000 lines, no Python class or function over 300 lines.

Tests, migrations and generated files (lock files, compiled translations) are aside. A piece
that is truly better whole is listed in WHOLE_ON_PURPOSE and must say why in its first lines;
the test checks that it does. Read from the files alone (ast for Python), so nothing is
imported and no Django is needed.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_FILE_LINES = 1_000
MAX_DEFINITION_LINES = 300
SOURCE_SUFFIXES = {
    ".py",
    ".mjs",
    ".js",
    ".ts",
    ".css",
    ".html",
    ".sh",
    ".json",
    ".yaml",
    ".yml",
    ".toml",
}
# Folders that are not source: tools' output, installed dependencies, tests, migrations
# (written by makemigrations), translations (locale/, compiled by makemessages/compilemessages).
SKIPPED_DIRS = {
    ".git",
    ".venv",
    ".hypothesis",
    "node_modules",
    "var",
    "tests",
    "migrations",
    "locale",
    "__pycache__",
}
SKIPPED_FILES = {"package-lock.json"}  # npm writes it
# path -> the words its first lines must hold, saying why it is whole.
WHOLE_ON_PURPOSE = {
    # One JSON Schema document, published under its own $id and read whole by editors and
    # validators; JSON has no comments, so its top-level $comment says so.
    "catalogue/schemas/plugin-manifest.schema.json": "one document on purpose",
}


def source_files(root: Path = ROOT) -> list[Path]:
    found: list[Path] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        for path in sorted(folder.iterdir()):
            if path.is_dir():
                if path.name not in SKIPPED_DIRS and not path.is_symlink():
                    stack.append(path)
            elif path.suffix in SOURCE_SUFFIXES and path.name not in SKIPPED_FILES:
                found.append(path)
    return found


def line_count(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(1 for _ in handle)


def long_definitions(path: Path, root: Path = ROOT) -> list[str]:
    """`file:line name (N lines)` for each class or function longer than the limit."""
    rel = path.relative_to(root)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(rel))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > MAX_DEFINITION_LINES:
                found.append(f"{rel}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_the_walk_finds_the_apps_sources_and_leaves_the_tests_out() -> None:
    found = {str(p.relative_to(ROOT)) for p in source_files()}
    assert {"sessions/turns.py", "pluginhost/node/host.mjs", "static/js/play.js"} <= found
    assert not any(p.startswith("tests/") or "/migrations/" in p for p in found)


def test_no_source_file_is_over_1000_lines() -> None:
    too_long = [
        f"{p.relative_to(ROOT)} ({n} lines)"
        for p in source_files()
        if (n := line_count(p)) > MAX_FILE_LINES
        and str(p.relative_to(ROOT)) not in WHOLE_ON_PURPOSE
    ]
    assert not too_long, f"over {MAX_FILE_LINES} lines; split them by concern: {too_long}"


def test_a_file_kept_whole_says_why_in_its_first_lines() -> None:
    for rel, words in WHOLE_ON_PURPOSE.items():
        path = ROOT / rel
        head = path.read_text(encoding="utf-8").splitlines()[:10]
        assert words in "\n".join(head).lower(), f"{rel}: its first lines do not say why"
        if path.suffix == ".json":
            assert words in json.loads(path.read_text(encoding="utf-8"))["$comment"].lower()


def test_no_python_class_or_function_is_over_300_lines() -> None:
    too_long = [d for p in source_files() if p.suffix == ".py" for d in long_definitions(p)]
    assert not too_long, f"over {MAX_DEFINITION_LINES} lines: {too_long}"


def test_the_definition_check_catches_a_long_method(tmp_path: Path) -> None:
    body = "\n".join(f"        x{i} = {i}" for i in range(MAX_DEFINITION_LINES))
    sample = tmp_path / "probe.py"
    sample.write_text(f"class Short:\n    def long(self):\n{body}\n", encoding="utf-8")
    assert long_definitions(sample, tmp_path) == [
        f"probe.py:1 Short ({MAX_DEFINITION_LINES + 2} lines)",
        f"probe.py:2 long ({MAX_DEFINITION_LINES + 1} lines)",
    ]
