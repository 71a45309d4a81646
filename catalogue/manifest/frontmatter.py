"""Split a Markdown manifest into YAML frontmatter and body, and parse the YAML safely.

The YAML is composed into a node graph with ruamel.yaml in safe mode and then turned into
plain JSON-like values by our own walk over the nodes. Doing the construction ourselves is
what lets us refuse the dangerous parts before they cost anything:

- any alias (`*name`) is refused, so an alias bomb ("billion laughs") is never expanded;
- any tag outside the plain JSON types is refused ("executable frontmatter");
- duplicate keys are refused, with the path of the second one;
- YAML timestamps stay the strings they were written as (`version: 2024-01-01` is "2024-01-01").

Most texts are read faster by libyaml (fast_yaml.py), which hands back to this pure parse any
text where it has a doubt; the pure parse is the reference and writes every finding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from catalogue.manifest.fast_yaml import PURE, fast_parse
from catalogue.manifest.types import Issue
from core.pointer import join

# 64 KiB of YAML is several times the largest real manifest; anything bigger is an attack or a
# mistake, and parsing it in pure Python would cost real time.
MAX_FRONTMATTER_BYTES = 64 * 1024
# Flow collections nest by recursion in the parser; refuse absurd nesting before parsing.
MAX_NESTING = 64

# Codes of findings about the YAML itself, at the path of the refused value.
YAML_CODES = frozenset(
    {
        "duplicate-key",
        "executable-frontmatter",
        "yaml-alias",
        "yaml-invalid-scalar",
        "non-scalar-key",
        "frontmatter-too-deep",
    }
)

_YAML_NS = "tag:yaml.org,2002:"
# Tags that map onto JSON values. Everything else (!!python/…, !!binary, !!set, !custom) would
# construct something a manifest must never contain.
_ALLOWED_TAGS = {
    _YAML_NS + name
    for name in ("str", "int", "float", "bool", "null", "seq", "map", "timestamp", "merge")
}


@dataclass
class Parsed:
    """One Markdown manifest file, split and parsed."""

    has_frontmatter: bool = False
    data: Any = None  # plain dicts/lists/scalars, or None when unparsable or empty
    body: str = ""
    issues: list[Issue] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.issues


_yaml = YAML(typ="safe", pure=True)
_constructor = _yaml.constructor


def split_markdown(raw: bytes, file: str, *, require_frontmatter: bool = True) -> Parsed:
    """Split and parse one Markdown file with YAML frontmatter."""
    result = Parsed()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        result.issues.append(
            Issue(
                file,
                "",
                "not-utf8",
                f"the file is not valid UTF-8 (byte {exc.start}): save it as UTF-8",
            )
        )
        return result
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        if require_frontmatter:
            result.issues.append(
                Issue(
                    file,
                    "",
                    "frontmatter-missing",
                    "the file must start with a '---' line opening the YAML frontmatter",
                )
            )
        result.body = text
        return result
    closing = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), None)
    if closing is None:
        result.issues.append(
            Issue(
                file, "", "frontmatter-unclosed", "the YAML frontmatter has no closing '---' line"
            )
        )
        return result
    result.has_frontmatter = True
    yaml_text = "\n".join(lines[1:closing])
    result.body = "\n".join(lines[closing + 1 :]).lstrip("\n")
    size = len(yaml_text.encode("utf-8"))
    if size > MAX_FRONTMATTER_BYTES:
        result.issues.append(
            Issue(
                file,
                "",
                "frontmatter-too-large",
                f"the frontmatter is {size} bytes; the limit is {MAX_FRONTMATTER_BYTES} bytes",
            )
        )
        return result
    result.data = parse_yaml(yaml_text, file, result.issues)
    return result


def _flow_depth(text: str) -> int:
    """A cheap upper bound of flow-collection nesting (brackets inside quotes count too)."""
    depth = deepest = 0
    for char in text:
        if char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif char in "]}" and depth:
            depth -= 1
    return deepest


_SURROGATE = re.compile("[\ud800-\udfff]")
_BRACKETS = re.compile(r"[\[\]{}]")


def parse_yaml(text: str, file: str, issues: list[Issue]) -> Any:
    """Parse YAML text into plain values; problems are appended to issues (never raised)."""
    if _BRACKETS.search(text) and _flow_depth(text) > MAX_NESTING:
        issues.append(
            Issue(
                file,
                "",
                "frontmatter-too-deep",
                f"the frontmatter nests deeper than {MAX_NESTING} levels",
            )
        )
        return None
    value = fast_parse(text, MAX_NESTING)
    if value is not PURE:
        return value
    return _parse_pure(text, file, issues)


def _parse_pure(text: str, file: str, issues: list[Issue]) -> Any:
    """The reference parse: ruamel's pure-Python composer and our walk over its nodes."""
    try:
        node = _yaml.compose(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        # +2: marks count from 0 and the frontmatter starts on the file's second line.
        where = f" (line {mark.line + 2}, column {mark.column + 1})" if mark else ""
        problem = exc.problem or exc.context or "invalid YAML"
        issues.append(
            Issue(file, "", "yaml-syntax", f"the frontmatter is not valid YAML: {problem}{where}")
        )
        return None
    except RecursionError:
        # Block sequences ("- - - - x") nest without brackets; the parser's recursion stops them.
        issues.append(
            Issue(
                file,
                "",
                "frontmatter-too-deep",
                f"the frontmatter nests deeper than {MAX_NESTING} levels",
            )
        )
        return None
    except (YAMLError, ValueError) as exc:
        issues.append(Issue(file, "", "yaml-syntax", f"the frontmatter is not valid YAML: {exc}"))
        return None
    if node is None:
        return None
    builder = _Builder(file, issues)
    return builder.build(node, (), 0)


class _Builder:
    """Turns composed YAML nodes into plain values, refusing aliases, tags and duplicate keys."""

    def __init__(self, file: str, issues: list[Issue]) -> None:
        self.file = file
        self.issues = issues
        self.seen: set[int] = set()

    def error(self, path: tuple[str | int, ...], code: str, message: str) -> None:
        self.issues.append(Issue(self.file, join("", *path), code, message))

    def build(self, node: Node, path: tuple[str | int, ...], depth: int) -> Any:
        # The composer returns the anchored node itself for an alias: a node met twice is one.
        if id(node) in self.seen:
            self.error(
                path,
                "yaml-alias",
                f"YAML aliases are not allowed in a manifest (alias of &{node.anchor or '?'}); write the value out",
            )
            return None
        self.seen.add(id(node))
        if depth > MAX_NESTING:
            self.error(
                path,
                "frontmatter-too-deep",
                f"the frontmatter nests deeper than {MAX_NESTING} levels",
            )
            return None
        tag = node.tag
        if tag not in _ALLOWED_TAGS:
            self.error(
                path,
                "executable-frontmatter",
                f"the YAML tag {tag!r} is not allowed: a manifest holds plain data only",
            )
            return None
        if isinstance(node, MappingNode):
            return self.mapping(node, path, depth)
        if isinstance(node, SequenceNode):
            return [
                self.build(item, (*path, index), depth + 1) for index, item in enumerate(node.value)
            ]
        if isinstance(node, ScalarNode):
            return self.scalar(node, path)
        return None  # pragma: no cover - ruamel has no other node kinds

    def mapping(self, node: MappingNode, path: tuple[str | int, ...], depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode) or id(key_node) in self.seen:
                self.error(path, "non-scalar-key", "mapping keys must be plain strings")
                continue
            if key_node.tag not in _ALLOWED_TAGS:
                self.error(
                    path,
                    "executable-frontmatter",
                    f"the YAML tag {key_node.tag!r} is not allowed: a manifest holds plain data only",
                )
                continue
            # Keys are JSON object keys: always the text as written ("1" stays "1", "<<" is "<<").
            key = key_node.value
            if "\x00" in key or _SURROGATE.search(key):
                self.error(
                    path,
                    "yaml-invalid-scalar",
                    "keys may not contain NUL or unpaired surrogate characters",
                )
                continue
            if key in result:
                self.error((*path, key), "duplicate-key", f"the key {key!r} appears more than once")
                continue
            result[key] = self.build(value_node, (*path, key), depth + 1)
        return result

    def scalar(self, node: ScalarNode, path: tuple[str | int, ...]) -> Any:
        tag = node.tag
        text = node.value
        try:
            if (
                tag == _YAML_NS + "str"
                or tag == _YAML_NS + "timestamp"
                or tag == _YAML_NS + "merge"
            ):
                if "\x00" in text or _SURROGATE.search(text):
                    # PostgreSQL cannot store NUL or lone surrogates in JSON text; no manifest needs them.
                    self.error(
                        path,
                        "yaml-invalid-scalar",
                        "strings may not contain NUL or unpaired surrogate characters",
                    )
                    return None
                # Dates stay text: a manifest never wants a datetime object.
                return text
            if tag == _YAML_NS + "null":
                return None
            if tag == _YAML_NS + "bool":
                return _constructor.construct_yaml_bool(node)
            if tag == _YAML_NS + "int":
                return _constructor.construct_yaml_int(node)
            if tag == _YAML_NS + "float":
                value = _constructor.construct_yaml_float(node)
                if value != value or value in (float("inf"), float("-inf")):
                    # JSON (and PostgreSQL's jsonb) has no NaN or infinity.
                    self.error(path, "yaml-invalid-scalar", f"{text!r}: numbers must be finite")
                    return None
                return value
        except (ValueError, TypeError, YAMLError) as exc:
            self.error(
                path,
                "yaml-invalid-scalar",
                f"{text!r} is not a valid {tag.rsplit(':', 1)[-1]}: {exc}",
            )
            return None
        self.error(
            path, "yaml-invalid-scalar", f"{text!r} is not a plain YAML scalar"
        )  # pragma: no cover
        return None
