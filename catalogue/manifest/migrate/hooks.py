"""The lifecycle hooks a package's entry registers with covel.on(...), found without running it.

Covel's packages register hooks in code (`covel.on("PostContextAssembly", handler, {enforce})`);
the current format also declares them under contributes.hooks, and a hook the manifest does not
declare is never called. This reads the entry module and every module it reaches by a relative
static import inside the package (the host's static import rule: nothing outside the package,
nothing by computed specifier), strips comments, and lists each `.on("<event>"` call whose event
is one of the spec's 17 (or `.registerHook("<event>"`, its other name), with the
`enforce` its options name. No code is loaded or run.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogue.manifest.schema import hook_events

# The lifecycle events a package may declare: the manifest schema's own enum.
EVENTS = frozenset(hook_events())
MAX_FILES = 200
MAX_BYTES = 1024 * 1024
SUFFIXES = ("", ".js", ".mjs", ".cjs", ".ts", ".mts")
INDEXES = ("index.js", "index.mjs", "index.ts")

_IMPORT = re.compile(
    r"""(?:\bimport\s*(?:[\w*{}\s,$]+\s*from\s*)?|\bexport\s*[\w*{}\s,$]*\s*from\s*|\bimport\s*\(\s*)"""
    r"""(["'])(\.{1,2}/[^"'\n]+)\1"""
)
_ON = re.compile(r"""\.(?:on|registerHook)\(\s*(["'])([A-Za-z]+)\1""")
_ENFORCE = re.compile(r"""\benforce\s*:\s*(["'])(pre|normal|post)\1""")


def strip_comments(code: str) -> str:
    """The code with // and /* */ comments blanked, strings and template literals kept."""
    out: list[str] = []
    i, n = 0, len(code)
    quote = ""
    while i < n:
        ch = code[i]
        if quote:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(code[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = ""
            i += 1
            continue
        if ch in "\"'`":
            quote = ch
            out.append(ch)
            i += 1
        elif code.startswith("//", i):
            end = code.find("\n", i)
            i = n if end == -1 else end
        elif code.startswith("/*", i):
            end = code.find("*/", i + 2)
            i = n if end == -1 else end + 2
            out.append(" ")
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _resolve(root: Path, importer: Path, specifier: str) -> Path | None:
    base = (importer.parent / specifier).resolve()
    candidates = [base.with_name(base.name + s) for s in SUFFIXES]
    if base.suffix == ".js":  # Node 24 strips TypeScript: ./x.js may be written as x.ts
        candidates.append(base.with_suffix(".ts"))
    candidates += [base / index for index in INDEXES]
    for candidate in candidates:
        if candidate.is_file() and candidate.is_relative_to(root):
            return candidate
    return None


def _call_text(code: str, start: int) -> str:
    """The text of the call whose "(" is just before start, up to its closing parenthesis."""
    depth, i = 1, start
    while i < len(code) and depth and i - start < 4000:
        if code[i] == "(":
            depth += 1
        elif code[i] == ")":
            depth -= 1
        i += 1
    return code[start:i]


def registered_hooks(root: Path, entry: str) -> list[tuple[str, str | None, str]]:
    """(event, enforce or None, package-relative file) of each covel.on(...) the entry reaches."""
    root = root.resolve()
    first = (root / entry).resolve()
    if not first.is_file() or not first.is_relative_to(root):
        return []
    found: list[tuple[str, str | None, str]] = []
    seen: set[Path] = set()
    queue = [first]
    while queue and len(seen) < MAX_FILES:
        file = queue.pop(0)
        if file in seen or file.stat().st_size > MAX_BYTES:
            continue
        seen.add(file)
        code = strip_comments(file.read_text(encoding="utf-8", errors="replace"))
        for match in _IMPORT.finditer(code):
            target = _resolve(root, file, match.group(2))
            if target is not None and target not in seen:
                queue.append(target)
        for match in _ON.finditer(code):
            event = match.group(2)
            if event not in EVENTS:
                continue
            call = _call_text(code, match.end())
            enforce = _ENFORCE.search(call)
            found.append(
                (event, enforce.group(2) if enforce else None, file.relative_to(root).as_posix())
            )
    return found
