"""core/pointer.py: RFC 6901 read strictly, written with escapes, resolved with the array rules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import pointer
from core.pointer import PointerError

ROOT = Path(__file__).resolve().parents[2]

# The document of RFC 6901, section 5, with what each of its pointers names.
RFC_DOC = {
    "foo": ["bar", "baz"],
    "": 0,
    "a/b": 1,
    "c%d": 2,
    "e^f": 3,
    "g|h": 4,
    "i\\j": 5,
    'k"l': 6,
    " ": 7,
    "m~n": 8,
}
RFC_EXAMPLES = [
    ("", RFC_DOC),
    ("/foo", ["bar", "baz"]),
    ("/foo/0", "bar"),
    ("/", 0),
    ("/a~1b", 1),
    ("/c%d", 2),
    ("/e^f", 3),
    ("/g|h", 4),
    ("/i\\j", 5),
    ('/k"l', 6),
    ("/ ", 7),
    ("/m~0n", 8),
]

texts = st.text(max_size=8)
token_lists = st.lists(st.one_of(texts, st.sampled_from(["~", "/", "~0", "~1", "~01", ""])))


@pytest.mark.parametrize(("text", "expected"), RFC_EXAMPLES)
def test_the_examples_of_rfc_6901_resolve(text, expected):
    assert pointer.resolve(RFC_DOC, text) == expected
    assert pointer.is_pointer(text)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", []),
        ("/", [""]),
        ("//", ["", ""]),
        ("/a~1b/0", ["a/b", "0"]),
        ("/~01", ["~1"]),  # "~0" first read as "~", then "1": not "/"
        ("/~10", ["/0"]),
        ("/~0~1", ["~/"]),
    ],
)
def test_parse_unescapes_each_token_once(text, tokens):
    assert pointer.parse(text) == tokens
    assert pointer.format(tokens) == text


@settings(max_examples=300)
@given(tokens=token_lists)
def test_format_then_parse_gives_the_tokens_back(tokens):
    written = pointer.format(tokens)
    assert pointer.parse(written) == tokens
    assert pointer.format(pointer.parse(written)) == written
    # Escaped, no token adds a "/" or a lone "~": one "/" per token, every "~" is ~0 or ~1.
    assert written.count("/") == len(tokens)
    assert all(written[i + 1] in "01" for i, c in enumerate(written) if c == "~")


@settings(max_examples=200)
@given(base=token_lists, more=token_lists)
def test_join_extends_a_pointer(base, more):
    assert pointer.join(pointer.format(base), *more) == pointer.format(base + more)
    assert pointer.parse(pointer.join(pointer.format(base), *more)) == base + more


def test_join_and_escape_take_integers():
    assert pointer.join("/a", "b/c", 1) == "/a/b~1c/1"
    assert pointer.escape(0) == "0"
    assert pointer.format(("contributes", "commands", 0)) == "/contributes/commands/0"


@settings(max_examples=200)
@given(
    path=st.lists(st.one_of(texts, st.integers(0, 3)), max_size=5),
    leaf=st.none() | st.integers() | texts,
)
def test_resolve_finds_what_was_put_at_the_formatted_pointer(path, leaf):
    # Build the value from the inside out: a text token is an object member, an integer an index.
    value: Any = leaf
    for token in reversed(path):
        if isinstance(token, int):
            value = [None] * token + [value]
        else:
            value = {token: value, "other": 1}
    assert pointer.resolve(value, pointer.format(path)) == leaf


def _refusal(value: Any, text: str) -> PointerError:
    with pytest.raises(PointerError) as caught:
        pointer.resolve(value, text)
    assert isinstance(caught.value, ValueError)
    assert caught.value.pointer == text
    assert str(caught.value) == f"{caught.value.message} [{caught.value.rule}]"
    assert caught.value.rule in pointer.RULES
    return caught.value


@pytest.mark.parametrize("text", ["a", "foo", "#/foo", " /foo", "~1"])
def test_a_pointer_must_be_empty_or_start_with_a_slash(text):
    error = _refusal(RFC_DOC, text)
    assert error.rule == "pointer-start"
    assert "must be empty or start with /" in error.message
    assert not pointer.is_pointer(text)


@pytest.mark.parametrize("text", ["/~", "/a~", "/a~2b", "/~a", "/~~0", "/m~0n/~", "/~-1"])
def test_a_tilde_is_only_tilde_0_or_tilde_1(text):
    error = _refusal({"a~2b": 1, "~": 2}, text)
    assert error.rule == "pointer-escape"
    assert "~ must be followed by 0 or 1" in error.message
    assert not pointer.is_pointer(text)
    with pytest.raises(PointerError):
        pointer.parse(text)


@pytest.mark.parametrize(
    "token",
    [
        "01",
        "00",
        "-1",
        "+1",
        " 1",
        "1 ",
        "1.0",
        "1e0",
        "0x1",
        "x",
        "",
        "-",  # names no item; only a caller passing dash=True takes it
        "\uff11",  # FULLWIDTH DIGIT ONE: str.isdigit() and int() take it
        "\u00b2",  # SUPERSCRIPT TWO: str.isdigit() takes it, int() refuses it
        "\u0661",  # ARABIC-INDIC DIGIT ONE
        "\U0001d7d9",  # MATHEMATICAL DOUBLE-STRUCK DIGIT ONE
    ],
)
def test_an_array_token_that_is_no_index_is_refused(token):
    error = _refusal(RFC_DOC, "/foo/" + pointer.escape(token))
    assert error.rule == "index-invalid"
    assert error.message == f"{token!r} is not an array index"
    assert not pointer.is_array_index(token)


@settings(max_examples=100)
@given(digit=st.characters(categories=["Nd"]).filter(lambda c: c not in "0123456789"))
def test_no_digit_outside_ascii_is_an_index(digit):
    for token in (digit, "1" + digit, digit + "1"):
        with pytest.raises(PointerError) as caught:
            pointer.array_index(token, 100, pointer="/x")
        assert caught.value.rule == "index-invalid"


@settings(max_examples=300)
@given(token=st.text(alphabet="0123456789-+ x\uff11", max_size=5))
def test_is_array_index_is_ascii_digits_without_a_leading_zero(token):
    expected = (
        token != ""
        and all(c in "0123456789" for c in token)
        and (token == "0" or not token.startswith("0"))
    )
    assert pointer.is_array_index(token) is expected


@pytest.mark.parametrize("token", ["2", "10", "9" * 30, "9" * 5000])
def test_an_index_past_the_end_is_refused_however_long(token):
    error = _refusal(RFC_DOC, "/foo/" + token)
    assert error.rule == "index-past-end"
    assert error.message == f"index {token} is past the end of an array of 2"


def test_dash_is_the_position_after_the_last_item_only_when_asked_for():
    assert pointer.array_index("-", 3, pointer="/a/-", dash=True) == 3
    assert pointer.array_index("2", 3, pointer="/a/2", dash=True) == 2
    with pytest.raises(PointerError) as caught:
        pointer.array_index("-", 3, pointer="/a/-")
    assert caught.value.rule == "index-invalid"
    assert caught.value.pointer == "/a/-"


@pytest.mark.parametrize(("text", "where"), [("/nope", "'nope'"), ("/foo~1", "'foo/'")])
def test_a_missing_member_is_refused(text, where):
    error = _refusal(RFC_DOC, text)
    assert error.rule == "member-missing"
    assert where in error.message


@pytest.mark.parametrize(
    ("text", "kind"),
    [("/foo/0/x", "a string"), ("//x", "a number"), ("/t/0", "a boolean"), ("/z/", "null")],
)
def test_a_pointer_cannot_go_on_through_a_scalar(text, kind):
    error = _refusal({**RFC_DOC, "t": True, "z": None}, text)
    assert error.rule == "not-container"
    assert kind in error.message


def test_tuples_are_arrays_and_mappings_objects():
    from types import MappingProxyType

    assert pointer.resolve(MappingProxyType({"a": ("x", "y")}), "/a/1") == "y"


def test_the_module_imports_neither_django_nor_an_app():
    apps = [p.name for p in ROOT.iterdir() if (p / "__init__.py").exists() and p.name != "core"]
    script = (
        "import sys; import core.pointer; "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {[*apps, 'django']!r}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
    assert "catalogue" in apps and "sessions" in apps  # the check looked at the real apps
