"""The codec: key validity, labels, key -> address -> key, and Go's case folding."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from sources.manifest import Codec, CodecError, equal_fold
from sources.manifest.codec import go_regex_compile, go_syntax_problem
from sources.manifest.fold import fold_orbit

PULLS = {
    "keys": ["{owner}/{repo}#{number}", "{owner}/{repo}"],
    "urls": [
        "https://pulls.example/{owner}/{repo}/pull/{number}",
        "https://pulls.example/{owner}/{repo}",
    ],
    "fields": {
        "owner": "[A-Za-z0-9][A-Za-z0-9-]*",
        "repo": "[A-Za-z0-9._-]+",
        "number": "[1-9][0-9]*",
    },
    "label": "{repo}#{number}",
}
owners = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9-]{0,20}\Z")
repos = st.from_regex(r"\A[A-Za-z0-9._-]{1,20}\Z")
numbers = st.integers(min_value=1, max_value=10**12).map(str)


@given(owners, repos, numbers)
def test_key_to_url_to_key_round_trips(owner: str, repo: str, number: str) -> None:
    codec = Codec(PULLS)
    key = f"{owner}/{repo}#{number}"
    resolved = codec.resolve_key(key)
    assert resolved.url == f"https://pulls.example/{owner}/{repo}/pull/{number}"
    assert codec.resolve_url(resolved.url).key == key
    assert resolved.fields == {"owner": owner, "repo": repo, "number": number}


@given(owners, repos)
def test_a_key_without_a_number_takes_the_first_address_whose_fields_it_has(
    owner: str, repo: str
) -> None:
    codec = Codec(PULLS)
    resolved = codec.resolve_key(f"{owner}/{repo}")
    assert resolved.url == f"https://pulls.example/{owner}/{repo}"
    assert codec.resolve_url(resolved.url).key == f"{owner}/{repo}"


# Default field patterns and values that need percent-encoding in an address.
LOOSE = {"keys": ["{space}:{page}"], "urls": ["https://wiki.example/{space}/wiki/{page}"]}
segment = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc"), blacklist_characters="/#?:%"
    ),
    min_size=1,
    max_size=12,
).filter(lambda s: not any(c.isspace() for c in s))


@given(segment, segment)
def test_round_trip_with_default_patterns_and_encoded_characters(space: str, page: str) -> None:
    codec = Codec(LOOSE)
    key = f"{space}:{page}"
    assume(codec.is_valid_key(key) and codec.parse_key(key)[1] == {"space": space, "page": page})
    url = codec.resolve_key(key).url
    assert url is not None and url.isascii()  # non-ASCII characters are percent-encoded
    assert codec.resolve_url(url).key == key


def test_a_field_without_a_pattern_takes_no_slash_hash_question_mark_or_space() -> None:
    codec = Codec({"keys": ["{owner}/{repo}"]})
    assert codec.is_valid_key("ackness/covel")
    for bad in ["a/b/c", "a/b#1", "a/b?x", "a/b c", "/b", "a/"]:
        assert not codec.is_valid_key(bad), bad


def test_each_field_matches_its_whole_pattern() -> None:
    codec = Codec(PULLS)
    # The pattern [1-9][0-9]* is anchored: "012" and "12a" are not numbers.
    assert not codec.is_valid_key("a/b#012")
    assert not codec.is_valid_key("a/b#12a")
    assert codec.is_valid_key("a/b#120")


def test_a_pattern_with_alternation_is_anchored_as_a_whole() -> None:
    codec = Codec({"keys": ["{kind}-{n}"], "fields": {"kind": "bug|feature", "n": "[0-9]+"}})
    assert codec.is_valid_key("bug-1") and codec.is_valid_key("feature-2")
    assert not codec.is_valid_key("bugfix-1") and not codec.is_valid_key("xbug-1")


def test_the_label_renders_the_key_for_people() -> None:
    codec = Codec(PULLS)
    assert codec.resolve_key("ackness/covel#7").label == "covel#7"


def test_a_label_naming_a_field_the_key_lacks_reads_the_key() -> None:
    assert Codec(PULLS).resolve_key("ackness/covel").label == "ackness/covel"


def test_an_empty_label_reads_the_key() -> None:
    codec = Codec({**PULLS, "label": ""})
    assert codec.resolve_key("ackness/covel#7").label == "ackness/covel#7"


def test_a_label_may_repeat_a_field() -> None:
    codec = Codec({**PULLS, "label": "{repo}#{number} ({repo})"})
    assert codec.resolve_key("ackness/covel#7").label == "covel#7 (covel)"


def test_an_address_of_a_keyless_template_tries_the_next_template() -> None:
    # Both templates match "https://x.example/abc"; only the second has a key's fields.
    codec = Codec(
        {
            "keys": ["{owner}/{repo}", "{name}"],
            "urls": ["https://x.example/{owner}", "https://x.example/{name}"],
        }
    )
    assert codec.resolve_url("https://x.example/abc").key == "abc"
    only_keyless = Codec({"keys": ["{owner}/{repo}"], "urls": ["https://x.example/{owner}"]})
    assert only_keyless.resolve_key("a/b").url == "https://x.example/a"
    with pytest.raises(CodecError, match="no key template has exactly its fields"):
        only_keyless.resolve_url("https://x.example/a")


def test_no_url_templates_means_no_address() -> None:
    codec = Codec({"keys": ["{id}"]})
    assert codec.resolve_key("x1").url is None
    with pytest.raises(CodecError, match="declares no URL templates"):
        codec.resolve_url("https://anything.example/x1")


def test_an_address_maps_back_to_the_key_with_the_same_fields() -> None:
    codec = Codec(PULLS)
    resolved = codec.resolve_url("https://pulls.example/ackness/covel/pull/12")
    assert resolved.as_dict() == {
        "key": "ackness/covel#12",
        "url": "https://pulls.example/ackness/covel/pull/12",
        "label": "covel#12",
        "fields": {"owner": "ackness", "repo": "covel", "number": "12"},
    }


def test_an_addresss_scheme_and_host_are_case_insensitive() -> None:
    assert (
        Codec(PULLS).resolve_url("HTTPS://Pulls.Example/ackness/covel/pull/3").key
        == "ackness/covel#3"
    )


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://elsewhere.example/a/b/pull/1", "matches no URL template"),
        ("https://pulls.example/a/b/pull/0", "does not match its pattern"),
        ("", "empty"),
    ],
)
def test_an_address_that_does_not_resolve_says_why(url: str, why: str) -> None:
    with pytest.raises(CodecError, match=why):
        Codec(PULLS).resolve_url(url)


@pytest.mark.parametrize(("key", "why"), [("nope", "matches no key template"), ("", "empty")])
def test_a_key_that_does_not_resolve_says_why(key: str, why: str) -> None:
    with pytest.raises(CodecError, match=why):
        Codec(PULLS).resolve_key(key)


def test_fold_case_lets_keys_differ_only_in_case() -> None:
    folded = Codec({**PULLS, "fields": {"number": "[0-9]+"}, "fold_case": True})
    assert folded.same_unit("Ackness/Covel#1", "ackness/covel#1")
    assert not folded.same_unit("ackness/covel#1", "ackness/covel#2")
    strict = Codec(PULLS)
    assert not strict.same_unit("Ackness/Covel#1", "ackness/covel#1")


def test_fold_case_matches_field_patterns_case_insensitively() -> None:
    codec = Codec({"keys": ["{name}"], "fields": {"name": "[a-z]+"}, "fold_case": True})
    assert codec.is_valid_key("ABC")
    assert not Codec({"keys": ["{name}"], "fields": {"name": "[a-z]+"}}).is_valid_key("ABC")


def test_fold_case_uses_simple_folding_in_patterns_too() -> None:
    # RE2's (?i) folds like Go: the Kelvin sign is a k, but ß is not "ss".
    codec = Codec({"keys": ["{name}"], "fields": {"name": "k[a-z]*"}, "fold_case": True})
    assert codec.is_valid_key("\u212aelvin")
    assert not Codec(
        {"keys": ["{name}"], "fields": {"name": "ss"}, "fold_case": True}
    ).is_valid_key("ß")


# --- Go's regexp syntax, where C++ RE2 is more lenient -----------------------------------------
@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        (r"\C", "invalid escape sequence: \\C"),
        (r"a(?i)\C+", "invalid escape sequence: \\C"),
        (r"\\\C", "invalid escape sequence: \\C"),  # an escaped backslash, then \C
        (r"(?P<é>a)", "invalid named capture: (?P<é>"),
        (r"(?<名>a)", "invalid named capture: (?<名>"),
        (r"\\C", None),  # a backslash and a C
        (r"\Q\C\E", None),  # quoted: the two characters \ and C
        (r"\Qa\C", None),  # \Q without \E quotes the rest
        (r"[\\C]", None),
        (r"[]\\C]", None),  # ] first in a class is itself
        (r"[[:alpha:]](?P<a_1>x)", None),
        (r"[(?P<é>]", None),  # inside a class, only characters
    ],
)
def test_go_syntax_problem_finds_what_only_cpp_re2_accepts(
    pattern: str, problem: str | None
) -> None:
    found = go_syntax_problem(pattern)
    if problem is None:
        assert found is None
        go_regex_compile(pattern)  # and RE2 compiles it: Go's syntax throughout
    else:
        assert found is not None and found.startswith(problem)


def test_go_regex_compile_refuses_what_go_refuses() -> None:
    with pytest.raises(ValueError, match=r"invalid escape sequence: \\C"):
        go_regex_compile(r"[a-z]\C")
    with pytest.raises(ValueError, match="invalid repetition size"):
        go_regex_compile("a{1001}")  # RE2's own message, as before


# --- Go's strings.EqualFold -------------------------------------------------------------------
GO_EQUAL_FOLD = [
    # (left, right, Go's answer); the comment says where Python's casefold disagrees.
    ("Go", "GO", True),
    ("K", "k", True),
    ("k", "\u212a", True),  # KELVIN SIGN folds to k in Go
    ("K", "\u212a", True),
    ("ß", "ss", False),  # Python: "ß".casefold() == "ss"
    ("ß", "SS", False),
    ("ß", "ẞ", True),  # U+1E9E LATIN CAPITAL LETTER SHARP S
    ("ﬀ", "ff", False),  # Python folds the ligature to "ff"
    ("ŉ", "ʼn", False),  # Python folds U+0149 to two runes
    ("\u01f0", "j\u030c", False),  # ǰ vs j + combining caron: Python folds to the pair
    ("İ", "i", False),  # Turkish dotted capital I folds to nothing simple
    ("ı", "I", False),  # dotless i folds to itself only
    ("ı", "i", False),
    ("σ", "ς", True),
    ("Σ", "ς", True),
    ("ſ", "s", True),  # long s
    ("ſ", "S", True),
    ("µ", "μ", True),  # MICRO SIGN and Greek mu
    ("Å", "\u212b", True),  # ANGSTROM SIGN
    ("ǅ", "ǆ", True),  # title case Dž
    ("ǅ", "Ǆ", True),
    ("\u0345", "ι", True),  # combining ypogegrammeni
    ("abc", "abcd", False),
    ("", "", True),
    ("ab", "a", False),
    ("1", "1", True),
    ("@", "`", False),  # differ by 0x20 but are not letters
    ("[", "{", False),
]


@pytest.mark.parametrize(("left", "right", "go"), GO_EQUAL_FOLD)
def test_equal_fold_answers_like_go(left: str, right: str, go: bool) -> None:
    assert equal_fold(left, right) is go
    assert equal_fold(right, left) is go


def test_some_cases_really_differ_from_python_casefold() -> None:
    differing = [(a, b) for a, b, go in GO_EQUAL_FOLD if (a.casefold() == b.casefold()) != go]
    assert ("ß", "ss") in differing and ("ﬀ", "ff") in differing


def test_the_kelvin_orbit_is_gos() -> None:
    assert fold_orbit("k") == {"K", "k", "\u212a"}
    assert fold_orbit("ß") == {"ß", "ẞ"}
    assert fold_orbit("1") == {"1"}


@given(st.text(max_size=20))
def test_equal_fold_is_reflexive_and_agrees_with_upper_and_lower_ascii(text: str) -> None:
    assert equal_fold(text, text)
    ascii_text = "".join(c for c in text if c.isascii())
    assert equal_fold(ascii_text.upper(), ascii_text.lower())
