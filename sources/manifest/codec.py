"""The codec of a source plugin: how its unit keys and web addresses are spelled.

A template is literal text with {field} placeholders. A key is valid when it matches one key
template in full, each field matching its pattern from [source.codec.fields] (an RE2 / Go
regular expression, anchored); a field without a pattern matches DEFAULT_FIELD_PATTERN.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

import re2

from sources.manifest.fold import equal_fold

# One or more characters that are not a slash, '#', '?' or white space: a path segment.
DEFAULT_FIELD_PATTERN = r"[^/#?\s]+"
FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
# Characters left as they are in a field value placed in an address (RFC 3986 pchar).
_URL_SAFE = "-._~!$&'()*+,;=:@"


def re2_options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # errors become loader issues, not stderr noise
    return options


def re2_compile(pattern: str) -> Any:
    """Compile with RE2; raises ValueError with RE2's message."""
    try:
        return re2.compile(pattern, options=re2_options())
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise ValueError(str(detail)) from None


def go_regex_compile(pattern: str) -> Any:
    """Compile a plugin's pattern as Go's regexp would: RE2, minus what only C++ RE2 accepts.

    Raises ValueError with RE2's message, or with Go's for the syntax Go refuses.
    """
    compiled = re2_compile(pattern)
    problem = go_syntax_problem(pattern)
    if problem:
        raise ValueError(problem)
    return compiled


def go_syntax_problem(pattern: str) -> str | None:
    """What Go's regexp/syntax refuses in a pattern C++ RE2 has compiled, or None.

    C++ RE2 takes \\C (any byte, which may split a UTF-8 character) and capture names with
    non-ASCII letters; Go refuses both. The scan skips \\Q...\\E literals, escaped characters
    (so \\\\C is a backslash and a C) and character classes.
    """
    i, end = 0, len(pattern)
    while i < end:
        char = pattern[i]
        if char == "\\" and i + 1 < end:
            escaped = pattern[i + 1]
            if escaped == "Q":
                close = pattern.find("\\E", i + 2)
                if close < 0:
                    return None  # the rest of the pattern is literal text
                i = close + 2
                continue
            if escaped == "C":
                return (
                    "invalid escape sequence: \\C (Go's regexp has no any-byte escape; "
                    "use . for any character)"
                )
            i += 2
            continue
        if char == "[":
            i = _class_end(pattern, i)
            continue
        if pattern.startswith(("(?P<", "(?<"), i):
            start = pattern.index("<", i) + 1
            close = pattern.find(">", start)
            name = pattern[start:close] if close >= 0 else ""
            if close >= 0 and not _GO_CAPTURE_NAME.fullmatch(name):
                return (
                    f"invalid named capture: {pattern[i : close + 1]} "
                    "(Go allows only ASCII letters, digits and _ in a group name)"
                )
        i += 1
    return None


_GO_CAPTURE_NAME = re.compile(r"[A-Za-z0-9_]+")


def _class_end(pattern: str, start: int) -> int:
    """The index just past the character class opening at start (RE2 has checked it)."""
    i = start + 1
    if pattern.startswith("^", i):
        i += 1
    if pattern.startswith("]", i):
        i += 1  # a ] first in a class is itself
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
        elif pattern.startswith("[:", i) and (close := pattern.find(":]", i + 2)) >= 0:
            i = close + 2
        elif pattern[i] == "]":
            return i + 1
        else:
            i += 1
    return i


class TemplateError(ValueError):
    pass


@dataclass(frozen=True)
class Template:
    """A parsed template: alternating literal parts and field names."""

    text: str
    parts: tuple[tuple[str, str], ...]  # ("lit", text) or ("field", name)

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(value for kind, value in self.parts if kind == "field")

    def render(self, values: Mapping[str, str], *, url: bool = False) -> str:
        out = []
        for kind, value in self.parts:
            if kind == "lit":
                out.append(value)
            else:
                out.append(quote(values[value], safe=_URL_SAFE) if url else values[value])
        return "".join(out)


def _split(text: str) -> tuple[tuple[str, str], ...]:
    """The literal parts and placeholders of a template; TemplateError on bad placeholder syntax."""
    parts: list[tuple[str, str]] = []
    position = 0
    for match in _PLACEHOLDER.finditer(text):
        literal = text[position : match.start()]
        if "{" in literal or "}" in literal:
            raise TemplateError(f"unbalanced brace in {text!r}")
        if literal:
            parts.append(("lit", literal))
        name = match.group(1)
        if not FIELD_NAME.fullmatch(name):
            raise TemplateError(
                f"placeholder {{{name}}} is not a field name (letters, digits and _, not starting with a digit)"
            )
        parts.append(("field", name))
        position = match.end()
    tail = text[position:]
    if "{" in tail or "}" in tail:
        raise TemplateError(f"unbalanced brace in {text!r}")
    if tail:
        parts.append(("lit", tail))
    return tuple(parts)


def parse_template(text: str) -> Template:
    """A key or URL template such as "{owner}/{repo}#{number}".

    TemplateError on a bad placeholder, a field twice, two fields touching or no field: a key
    is read back into its fields, which needs each field once and literal text between them.
    """
    parts = _split(text)
    seen: set[str] = set()
    previous = ("lit", "")
    for kind, name in parts:
        if kind != "field":
            previous = (kind, name)
            continue
        if name in seen:
            raise TemplateError(f"field {{{name}}} appears twice")
        if previous[0] == "field":
            raise TemplateError(
                f"fields {{{previous[1]}}} and {{{name}}} touch; put literal text between them"
            )
        seen.add(name)
        previous = (kind, name)
    if not seen:
        raise TemplateError("a template needs at least one {field}")
    return Template(text=text, parts=parts)


def parse_label(text: str) -> Template:
    """The label template: only filled in, never read back, so any {field} may repeat or touch.

    TemplateError on an unbalanced brace or a placeholder that is not a field name.
    """
    return Template(text=text, parts=_split(text))


# Our capture groups carry a prefix, so a field pattern's own named groups never clash.
_GROUP_PREFIX = "covel_field_"


def _group(field: str) -> str:
    return _GROUP_PREFIX + field


def _fields(match: Any) -> dict[str, str]:
    return {
        name.removeprefix(_GROUP_PREFIX): value
        for name, value in match.groupdict().items()
        if name.startswith(_GROUP_PREFIX) and value is not None
    }


class CodecError(ValueError):
    """Why a key or an address does not resolve (shown to the caller as a 422)."""


@dataclass(frozen=True)
class Resolved:
    key: str
    url: str | None
    label: str
    fields: dict[str, str]

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "url": self.url, "label": self.label, "fields": dict(self.fields)}


class Codec:
    """Built from a valid [source.codec] table (the loader has checked every part)."""

    def __init__(self, table: Mapping[str, Any]) -> None:
        self.fold_case = bool(table.get("fold_case", False))
        self.patterns: dict[str, str] = dict(table.get("fields", {}) or {})
        self.keys = tuple(parse_template(t) for t in table.get("keys", ()))
        self.urls = tuple(parse_template(t) for t in table.get("urls", ()) or ())
        label = table.get("label", "") or ""
        self.label = parse_label(label) if label else None
        flags = "(?i)" if self.fold_case else ""
        self._field_res = {
            name: re2_compile(f"{flags}(?:{pattern})") for name, pattern in self.patterns.items()
        }
        self._default_re = re2_compile(f"{flags}(?:{DEFAULT_FIELD_PATTERN})")
        self._key_res = [re2_compile(flags + self._regex(t, url=False)) for t in self.keys]
        # Two readings of an address: fields by their own patterns (the common case, where
        # encoding changed nothing), then any percent-encoded segment, decoded and checked.
        self._url_res = [
            (
                re2_compile(flags + self._regex(t, url=False, literal_fold=True)),
                re2_compile(flags + self._regex(t, url=True, literal_fold=True)),
            )
            for t in self.urls
        ]

    def _pattern(self, name: str) -> str:
        return self.patterns.get(name, DEFAULT_FIELD_PATTERN)

    def _regex(self, template: Template, *, url: bool, literal_fold: bool = False) -> str:
        out = []
        for kind, value in template.parts:
            if kind == "lit":
                # An address's scheme and host are case-insensitive whatever fold_case says.
                literal = re2.escape(value)
                out.append(f"(?i:{literal})" if literal_fold else literal)
            elif url:
                # A field in an address is percent-encoded, so it never holds / ? # or space;
                # its decoded value is checked against the field's pattern afterwards.
                out.append(f"(?P<{_group(value)}>[^/?#\\s]+)")
            else:
                out.append(f"(?P<{_group(value)}>(?:{self._pattern(value)}))")
        return "".join(out)

    def _field_matches(self, name: str, value: str) -> bool:
        regex = self._field_res.get(name, self._default_re)
        return regex.fullmatch(value) is not None

    # -- keys ------------------------------------------------------------------------------
    def parse_key(self, key: str) -> tuple[Template, dict[str, str]]:
        """The first key template the key matches, with its field values."""
        if not isinstance(key, str) or key == "":
            raise CodecError("the key is empty")
        for template, regex in zip(self.keys, self._key_res, strict=True):
            match = regex.fullmatch(key)
            if match is not None:
                return template, _fields(match)
        spelled = ", ".join(repr(t.text) for t in self.keys)
        raise CodecError(f"{key!r} matches no key template ({spelled})")

    def is_valid_key(self, key: str) -> bool:
        try:
            self.parse_key(key)
        except CodecError:
            return False
        return True

    def render_label(self, key: str, fields: Mapping[str, str]) -> str:
        """The label template filled in; empty, or a field the key lacks, reads the key."""
        if self.label is None or any(name not in fields for name in self.label.fields):
            return key
        return self.label.render(fields)

    def key_url(self, fields: Mapping[str, str]) -> str | None:
        """The first URL template whose fields the key has."""
        for template in self.urls:
            if all(name in fields for name in template.fields):
                return template.render(fields, url=True)
        return None

    def resolve_key(self, key: str) -> Resolved:
        _, fields = self.parse_key(key)
        return Resolved(
            key=key, url=self.key_url(fields), label=self.render_label(key, fields), fields=fields
        )

    # -- addresses -------------------------------------------------------------------------
    def parse_url(self, url: str) -> tuple[str, dict[str, str]]:
        """The key an address names: the key template with the same fields, filled in."""
        if not isinstance(url, str) or url == "":
            raise CodecError("the address is empty")
        if not self.urls:
            raise CodecError("this plugin declares no URL templates")
        matched_any = False
        keyless: CodecError | None = None
        for template, regexes in zip(self.urls, self._url_res, strict=True):
            fields: dict[str, str] | None = None
            for regex in regexes:
                match = regex.fullmatch(url)
                if match is None:
                    continue
                matched_any = True
                values = {k: unquote(v) for k, v in _fields(match).items()}
                if all(self._field_matches(name, value) for name, value in values.items()):
                    fields = values
                    break
            if fields is None:
                continue
            wanted = set(template.fields)
            for key_template in self.keys:
                if set(key_template.fields) == wanted:
                    return key_template.render(fields), fields
            # A URL template may use fewer fields than any key (an address of many keys);
            # its address names no key, but a later template may still name one.
            keyless = keyless or CodecError(
                f"{url!r} matches the URL template {template.text!r}, but no key template has "
                f"exactly its fields ({', '.join(sorted(wanted))})"
            )
        if keyless is not None:
            raise keyless
        if matched_any:
            raise CodecError(f"{url!r} has a field that does not match its pattern")
        spelled = ", ".join(repr(t.text) for t in self.urls)
        raise CodecError(f"{url!r} matches no URL template ({spelled})")

    def resolve_url(self, url: str) -> Resolved:
        key, _ = self.parse_url(url)
        return self.resolve_key(key)

    # -- identity --------------------------------------------------------------------------
    def same_unit(self, left: str, right: str) -> bool:
        """Two keys name one unit: equal, or with fold_case equal under Go's EqualFold."""
        return equal_fold(left, right) if self.fold_case else left == right
