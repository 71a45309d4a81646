"""The libyaml fast path (fast_yaml.py) reads every text it takes exactly as the pure parse does.

Where it answers at all, the pure parse must give the same values, of the same types, in the
same key order, with no finding; everything else must be left to the pure parse (PURE).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalogue.manifest import fast_yaml
from catalogue.manifest.fast_yaml import PURE, fast_parse
from catalogue.manifest.frontmatter import MAX_NESTING, _parse_pure, parse_yaml

REPO = Path(__file__).resolve().parents[2]
needs_libyaml = pytest.mark.skipif(
    fast_yaml._libyaml is None, reason="PyYAML without libyaml: every text takes the pure parse"
)


def same(a: Any, b: Any) -> bool:
    """Equal values of identical types (1, 1.0 and True are three different answers)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def verdict(text: str) -> str:
    """'fast' when the fast path answered and agrees, 'pure' when it left the text to the pure
    parse; an AssertionError when it answered otherwise than the pure parse."""
    fast = fast_parse(text, MAX_NESTING)
    issues: list[Any] = []
    pure = _parse_pure(text, "PLUGIN.md", issues)
    if fast is PURE:
        return "pure"
    assert not issues, f"the fast path read {text!r} as {fast!r}; the pure parse found {issues}"
    assert same(fast, pure), f"{text!r}: fast {fast!r}, pure {pure!r}"
    return "fast"


def frontmatters() -> list[tuple[str, str]]:
    """(file, frontmatter text) of every Markdown manifest and YAML file in the repository's
    bundled plugins, test fixtures and examples."""
    found = []
    for top in ("plugins", "tests", "source-plugins", "world-packages", "worlds"):
        for dirpath, dirnames, filenames in os.walk(REPO / top):
            dirnames[:] = [d for d in dirnames if d not in ("node_modules", "__pycache__")]
            for name in filenames:
                path = Path(dirpath, name)
                text = path.read_bytes().decode("utf-8", "replace").replace("\r\n", "\n")
                if name.endswith((".yaml", ".yml")):
                    found.append((str(path), text))
                elif name.endswith(".md") and text.startswith("---\n"):
                    lines = text.split("\n")
                    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), 0)
                    if end:
                        found.append((str(path), "\n".join(lines[1:end])))
    return found


@needs_libyaml
def test_every_manifest_in_the_repository_reads_alike() -> None:
    texts = frontmatters()
    assert len(texts) > 40
    kinds = [verdict(text) for _, text in texts]
    # The bundled plugins are plain manifests: the fast path reads them, not only the pure one.
    assert kinds.count("fast") > len(kinds) * 0.8


@needs_libyaml
@pytest.mark.parametrize(
    "text",
    [
        "tags: [mode:dice, data:weather]",  # a colon inside a flow plain scalar (YAML 1.2)
        "a: yes\nb: no\nc: on\nd: off\ne: y",  # strings in 1.2, booleans in 1.1
        "a: 010\nb: 0o10\nc: 0x1F\nd: 1_000\ne: 1:20\nf: +12\ng: -0",
        "a: 1.5\nb: 1e3\nc: .5\nd: 6.8523015e+5\ne: 190:20:30.15",
        "version: 2024-01-01\nwhen: 2001-12-14t21:59:43.10-05:00",
        "a: ~\nb: null\nc:\nd: Null\ne: NULL",
        "a: true\nb: True\nc: TRUE\nd: false",
        "a: \"x\\ty \\u00e9 \\x41 \\/\"\nb: 'it''s'\nc: |\n  one\n  two\nd: >-\n  folded\n  text\n",
        "text: a\n  continued plain\n\n  with a blank line",
        "<<: {a: 1}\nb: <<",
        "? plain\n: value",
        "{a: 1, b: [x, {c: d}]}",
        "- a\n- - b\n  - c\n-\n",
        "# only a comment\n",
        "",
        "key: value # comment\nother: 'quoted # not a comment'",
        "url: https://example.com/a?b=c#d\nemail: a@b.c",
        "desc: ünïcödé ✓ 日本語 😀",
        "a: 'x'\n...\n",
        "---\na: 1",
    ],
)
def test_yaml_corners_read_alike(text: str) -> None:
    verdict(text)


@needs_libyaml
@pytest.mark.parametrize(
    "text",
    [
        "a: &x 1\nb: *x",  # an alias
        "a: &x 1",  # an anchor
        "a: !!python/object/apply:os.system ['x']",  # a tag
        "a: !custom x",
        "a: 1\na: 2",  # a duplicate key
        "? [a, b]\n: c",  # a complex key
        "%YAML 1.1\n---\na: yes",  # a directive
        "a: 'x\\0'",  # NUL (not even an escape: quoted in single quotes it is text)
        'a: "x\\0y"',  # NUL from an escape
        'a: "\\ud800"',  # a lone surrogate from an escape
        "a: .nan",
        "a: -.inf",
        "a:\tb",  # a tab
        "a: x\u2028y",  # a 1.1 line break
        "a: [1, 2",  # a syntax error
        "a: 1\n---\nb: 2",  # two documents
        "a: " + "[" * 70 + "]" * 70,  # deeper than the limit
    ],
)
def test_what_the_pure_parse_judges_is_left_to_it(text: str) -> None:
    if verdict(text) == "fast":
        # Only texts the pure parse reads without a finding may be answered by the fast path.
        issues: list[Any] = []
        _parse_pure(text, "PLUGIN.md", issues)
        assert not issues
    else:
        assert fast_parse(text, MAX_NESTING) is PURE


def test_findings_are_the_pure_parse_s_own() -> None:
    issues: list[Any] = []
    assert parse_yaml("a: 1\nb: &x 2\nc: *x\na: 3", "PLUGIN.md", issues) == {
        "a": 1,
        "b": 2,
        "c": None,
    }
    assert [(i.path, i.code) for i in issues] == [("/c", "yaml-alias"), ("/a", "duplicate-key")]


def test_without_libyaml_the_pure_parse_reads_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fast_yaml, "_libyaml", None)
    assert fast_parse("a: 1", MAX_NESTING) is PURE
    assert parse_yaml("tags: [mode:dice]", "PLUGIN.md", []) == {"tags": ["mode:dice"]}


# Generated texts: YAML's indicators, quotes, escapes, indentation and line breaks, mixed with
# words, numbers and the scalars the two YAML versions resolve differently.
PIECES = st.sampled_from(
    [
        *"-:,[]{}#&*!|>'\"%@`?\\ \n.+_~/=0123456789",
        "  ",
        "\n  ",
        "\n- ",
        "\n    ",
        ": ",
        "- ",
        "a",
        "key",
        "mode:dice",
        "yes",
        "no",
        "on",
        "true",
        "True",
        "null",
        "~",
        "010",
        "0o7",
        "0x1F",
        "1_0",
        "1:20",
        "1.5",
        "1e3",
        ".inf",
        ".NaN",
        "2024-01-01",
        "<<",
        "\\t",
        "\\x41",
        "\\u00e9",
        "\\N",
        "\\_",
        "\\/",
        "é",
        "日本",
        "\t",
        "\r",
        "\u2028",
        "---",
        "...",
        "|-",
        ">+",
        "|2",
        "? ",
        "!!str ",
        "&a ",
        "*a",
    ]
)
TEXTS = st.lists(PIECES, max_size=40).map("".join)


def lines_of(pairs: list[tuple[int, str, str]]) -> str:
    return "\n".join(f"{' ' * indent}{key}: {value}" for indent, key, value in pairs)


STRUCTURED = st.lists(
    st.tuples(
        st.sampled_from([0, 0, 2, 4, 1, 3]),
        st.sampled_from(["a", "b", "id", "tags", "- a", "'q'", '"d"', "x y", "k:"]),
        TEXTS.map(lambda t: t.replace("\n", " ")),
    ),
    max_size=8,
).map(lines_of)


@needs_libyaml
@settings(
    max_examples=int(os.environ.get("FAST_YAML_EXAMPLES", "400")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.one_of(TEXTS, STRUCTURED))
def test_generated_texts_read_alike(text: str) -> None:
    verdict(text)
