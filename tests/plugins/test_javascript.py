"""The JavaScript of every bundled package: valid ES modules that import only what Covel provides.

Plugins may import files inside their own package, @covel/plugin-handlers-utils and zod
(the host supplies both); nothing else resolves when a package is installed.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

PLUGINS_DIR = Path(__file__).resolve().parents[2] / "plugins"
JS_FILES = sorted(PLUGINS_DIR.rglob("*.js"))
ENTRY_MODULES = sorted(PLUGINS_DIR.glob("*/server/index.js"))
ALLOWED_BARE = {"@covel/plugin-handlers-utils", "zod"}
# Static imports and re-exports: `import x from "y"`, `import "y"`, `export ... from "y"`.
IMPORT = re.compile(
    r"""^\s*(?:import|export)\s+(?:[\w$*\s,]|\{[^}]*\})*?\bfrom\s*["']([^"']+)["']"""
    r"""|^\s*import\s*["']([^"']+)["']""",
    re.MULTILINE,
)
DYNAMIC_IMPORT = re.compile(r"""\bimport\s*\(""")
REQUIRE = re.compile(r"""\brequire\s*\(""")
# Block comments and whole-line comments (JSDoc type hints name modules in import() types).
COMMENTS = re.compile(r"/\*.*?\*/|^\s*//[^\n]*", re.DOTALL | re.MULTILINE)


def specifiers(text: str) -> list[str]:
    return [a or b for a, b in IMPORT.findall(text)]


def _id(path: Path) -> str:
    return str(path.relative_to(PLUGINS_DIR))


def test_there_is_javascript_to_check() -> None:
    assert len(JS_FILES) >= 10


def node_check(node_path: str, source: str) -> subprocess.CompletedProcess[str]:
    # The packages are ES modules without a package.json; `node --check file.js` may guess
    # CommonJS and pass broken files, so the source goes through stdin as a module.
    return subprocess.run(
        [node_path, "--input-type=module", "--check"],
        input=source,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_node_check_rejects_a_broken_module(node_path: str) -> None:
    assert node_check(node_path, "export default function register(covel) {\n").returncode != 0
    assert node_check(node_path, 'import x from "./y.js";\nexport default x;\n').returncode == 0


@pytest.mark.parametrize("path", JS_FILES, ids=_id)
def test_it_passes_node_check(node_path: str, path: Path) -> None:
    result = node_check(node_path, path.read_text(encoding="utf-8"))
    assert result.returncode == 0, f"{_id(path)}: {result.stderr.strip()}"


@pytest.mark.parametrize("path", JS_FILES, ids=_id)
def test_it_imports_only_its_own_files_zod_and_the_sdk(path: Path) -> None:
    text = COMMENTS.sub("", path.read_text(encoding="utf-8"))
    package_root = PLUGINS_DIR / path.relative_to(PLUGINS_DIR).parts[0]
    assert not DYNAMIC_IMPORT.search(text), (
        f"{_id(path)}: dynamic import() is not allowed in a bundled package"
    )
    assert not REQUIRE.search(text), f"{_id(path)}: require() is not available to ES module plugins"
    for specifier in specifiers(text):
        if specifier.startswith("."):
            target = (path.parent / specifier).resolve()
            assert target.is_file(), f"{_id(path)}: import {specifier!r} names no file"
            assert target.is_relative_to(package_root.resolve()), (
                f"{_id(path)}: import {specifier!r} leaves the package"
            )
        else:
            assert specifier in ALLOWED_BARE, (
                f"{_id(path)}: import {specifier!r} is not provided by Covel; "
                f"only relative files, {', '.join(sorted(ALLOWED_BARE))} may be imported"
            )


def test_the_import_pattern_sees_each_form() -> None:
    # Guards the regex above: a checker that matched nothing would pass every file.
    sample = 'import a from "./a.js";\nimport { b } from "zod";\nexport { c } from "../c.js";\nimport "side";\n'
    assert specifiers(sample) == ["./a.js", "zod", "../c.js", "side"]
    multi = 'import {\n  a,\n  b,\n} from "./lib.js";\nexport default async function f() {\n  return "x";\n}\n'
    assert specifiers(multi) == ["./lib.js"]


def test_most_packages_have_an_entry_module() -> None:
    assert len(ENTRY_MODULES) >= 6


@pytest.mark.parametrize("entry", ENTRY_MODULES, ids=_id)
def test_entry_modules_export_a_default_register_function(entry: Path) -> None:
    text = entry.read_text(encoding="utf-8")
    assert re.search(r"export\s+default\s+function\s+register\s*\(\s*covel\s*\)", text), (
        f"{_id(entry)} must `export default function register(covel)`"
    )
