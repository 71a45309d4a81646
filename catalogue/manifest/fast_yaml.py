"""A fast path for frontmatter.parse_yaml: libyaml's parser (PyYAML's C extension) read event by
event, with the scalars resolved by ruamel's YAML 1.2 rules.

The pure-Python ruamel parse is most of what a first sync of a large directory costs (about
10 ms a manifest); libyaml reads the same text in a fraction of that. But libyaml is a YAML
1.1 parser, so it is trusted only where both read a text alike, and any doubt goes back to the
pure parse, which stays the reference:

- libyaml only splits the text into events; what a plain scalar means (`yes` is a string, `010`
  the number 10, `2024-01-01` text) is decided by ruamel's own 1.2 resolver and constructors,
  exactly as the pure parse decides it;
- anything the pure parse reports or refuses (aliases, anchors, tags, directives, duplicate
  keys, complex keys, NUL, deep nesting, NaN) is not judged here: the text is parsed again the
  pure way, which writes the findings, so issues always come from one parser;
- texts with characters the two YAML versions read differently (tabs, the 1.1 line breaks
  NEL/LS/PS, a byte-order mark, control characters) never take this path;
- any libyaml error, and libyaml missing, means the pure parse.

tests/manifest/test_fast_yaml.py compares both paths on every bundled package, every test
fixture and generated texts.
"""

from __future__ import annotations

import re
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.nodes import ScalarNode

try:
    from yaml import _yaml as _libyaml  # PyYAML's binding of libyaml
    from yaml.events import (
        MappingEndEvent,
        MappingStartEvent,
        ScalarEvent,
        SequenceEndEvent,
        SequenceStartEvent,
        StreamEndEvent,
    )
except ImportError:  # PyYAML built without libyaml: every text takes the pure parse
    _libyaml = None

_NS = "tag:yaml.org,2002:"
_STR, _TIMESTAMP, _MERGE = _NS + "str", _NS + "timestamp", _NS + "merge"
_NULL, _BOOL, _INT, _FLOAT = _NS + "null", _NS + "bool", _NS + "int", _NS + "float"
# The plain-data tags frontmatter._ALLOWED_TAGS names that a plain scalar can resolve to.
_KEY_TAGS = {_STR, _TIMESTAMP, _MERGE, _NULL, _BOOL, _INT, _FLOAT}
# Characters YAML 1.1 and 1.2 treat differently, or that the pure parse refuses in its own words
# (C0 controls but newline, DEL, C1 controls, BOM, surrogates); a directive line (`%YAML 1.1`
# would switch the pure parse to 1.1 rules).
_NOT_HERE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff]|^%", re.M)

# A ruamel instance that never parses, for its resolver and constructors: nothing read before can
# move it off YAML 1.2 (a `%YAML 1.1` text never comes here).
_ruamel = YAML(typ="safe", pure=True)
_BLOCK_HEADER = re.compile(r"[|>](?:[1-9][+-]?|[+-][1-9]?)?(?: +#.*| *)$")
_REFUSED = re.compile("[\x00\ud800-\udfff]")

_resolver = _ruamel.resolver
_constructor = _ruamel.constructor


class _Doubt(Exception):
    """The pure parse must read this text (it reports or decides something this path leaves to it)."""


class _Pure:
    """The answer of fast_parse when the text must take the pure parse."""


PURE = _Pure()


def fast_parse(text: str, max_nesting: int) -> Any:
    """The plain value of the YAML text, or PURE when the pure parse must read it."""
    if _libyaml is None or _NOT_HERE.search(text):
        return PURE
    parser = _libyaml.CParser(text)
    try:
        parser.get_event()  # the stream's start
        event = parser.get_event()
        if isinstance(event, StreamEndEvent):
            return None  # nothing but comments and blank lines: the pure parse's None too
        if event.version or event.tags:  # %YAML or %TAG directives
            return PURE
        value = _Reader(parser, text, max_nesting).value(parser.get_event(), 0)
        parser.get_event()  # the document's end
        if not isinstance(parser.get_event(), StreamEndEvent):
            return PURE  # a second document: the pure parse refuses it in its own words
        return value
    except _Doubt:
        return PURE
    except Exception:  # noqa: BLE001 - any libyaml error or oddity: the pure parse decides
        return PURE
    finally:
        parser.dispose()


class _Reader:
    def __init__(self, parser: Any, text: str, max_nesting: int) -> None:
        self.parser = parser
        self.text = text
        self.max_nesting = max_nesting
        self.lines: list[str] | None = None

    def value(self, event: Any, depth: int) -> Any:
        if depth > self.max_nesting or getattr(event, "anchor", None) is not None:
            raise _Doubt
        if isinstance(event, ScalarEvent):
            if event.style in ("|", ">"):
                self.block_header(event)
            return _scalar(event)
        if isinstance(event, SequenceStartEvent):
            if event.tag is not None:
                raise _Doubt
            items = []
            while not isinstance(event := self.parser.get_event(), SequenceEndEvent):
                items.append(self.value(event, depth + 1))
            return items
        if isinstance(event, MappingStartEvent):
            if event.tag is not None:
                raise _Doubt
            result: dict[str, Any] = {}
            while not isinstance(event := self.parser.get_event(), MappingEndEvent):
                if (
                    not isinstance(event, ScalarEvent)
                    or event.anchor is not None
                    or event.tag is not None
                    or event.style in ("|", ">")
                ):
                    raise _Doubt  # a complex, anchored, tagged or block key
                key = _text(event.value)
                if event.implicit[0] and _plain_tag(key) not in _KEY_TAGS:
                    raise _Doubt  # `=` (the value tag) as a key: refused by the pure parse
                if key in result:
                    raise _Doubt  # a duplicate key
                result[key] = self.value(self.parser.get_event(), depth + 1)
            return result
        raise _Doubt  # an alias

    def block_header(self, event: Any) -> None:
        """libyaml takes block scalar headers the pure parse refuses (`|#`): only the plain
        forms are read here."""
        if self.lines is None:
            self.lines = self.text.split("\n")
        mark = event.start_mark
        if not _BLOCK_HEADER.match(self.lines[mark.line], mark.column):
            raise _Doubt


def _scalar(event: Any) -> Any:
    if event.tag is not None:
        raise _Doubt
    text = event.value
    if not event.implicit[0]:  # quoted or a block scalar: a string
        return _text(text)
    tag = _plain_tag(text)
    if tag in (_STR, _TIMESTAMP, _MERGE):
        return _text(text)  # dates stay the text written, as in the pure parse
    if tag == _NULL:
        return None
    node = ScalarNode(tag, text)
    if tag == _BOOL:
        return _constructor.construct_yaml_bool(node)
    if tag == _INT:
        return _constructor.construct_yaml_int(node)
    if tag == _FLOAT:
        value = _constructor.construct_yaml_float(node)
        if value != value or value in (float("inf"), float("-inf")):
            raise _Doubt  # refused by the pure parse, with its message
        return value
    raise _Doubt


def _plain_tag(text: str) -> str:
    """The tag YAML 1.2 gives a plain scalar, by ruamel's resolver (as the pure parse does)."""
    return str(_resolver.resolve(ScalarNode, text, (True, False)))


def _text(text: str) -> str:
    if _REFUSED.search(text):
        raise _Doubt  # NUL or a lone surrogate (an escape in quotes): refused by the pure parse
    return text
