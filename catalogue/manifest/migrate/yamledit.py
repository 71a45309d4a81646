"""ruamel round-trip helpers: edit a frontmatter in place, keeping comments, order and quoting."""

from __future__ import annotations

import io
import re
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.tokens import CommentToken

# ------------------------------------------------------------------ YAML round-trip helpers


def _yaml(text: str) -> YAML:
    y = YAML(typ="rt", pure=True)
    y.preserve_quotes = True
    y.width = 4096  # never re-wrap a long line the author wrote
    # Keep the author's list style: indented ("  - a" under its key) or flush ("- a").
    if re.search(r"^( *)[^\s#-][^\n]*:[ \t]*\n\1  +- ", text, re.M):
        y.indent(mapping=2, sequence=4, offset=2)
    else:
        y.indent(mapping=2, sequence=2, offset=0)
    return y


def _dump(y: YAML, data: Any) -> str:
    stream = io.StringIO()
    y.dump(data, stream)
    return stream.getvalue()


# Comment lines of an emptied map, by id(map), until the map is removed (see _remove).
_PENDING: dict[int, CommentToken] = {}


def _trailing(value: Any) -> CommentToken | None:
    """The comment lines after a collection: ruamel keeps them on its last item."""
    if isinstance(value, CommentedMap) and not value:
        return _PENDING.pop(id(value), None)
    if isinstance(value, CommentedMap) and value:
        last = list(value)[-1]
        entry = value.ca.items.get(last)
        if entry and len(entry) > 2 and entry[2] is not None:
            token = entry[2]
            entry[2] = None
            return token
        return _trailing(value[last])
    if isinstance(value, CommentedSeq) and value:
        last = len(value) - 1
        entry = value.ca.items.get(last)
        if entry and entry[0] is not None:
            token = entry[0]
            entry[0] = None
            return token
        return _trailing(value[last])
    return None


def _attach(cm: CommentedMap, key: Any, token: CommentToken) -> None:
    """Put comment lines after key's value (appending to what is there)."""
    value = cm[key]
    if isinstance(value, CommentedMap | CommentedSeq) and value:
        if isinstance(value, CommentedMap):
            _attach(value, list(value)[-1], token)
        else:
            last = len(value) - 1
            if isinstance(value[last], CommentedMap | CommentedSeq) and value[last]:
                _attach_seq(value, last, token)
            else:
                entry = value.ca.items.setdefault(last, [None, None])
                entry[0] = _merge(entry[0], token)
        return
    entry = cm.ca.items.setdefault(key, [None, None, None, None])
    entry[2] = _merge(entry[2], token)


def _attach_seq(seq: CommentedSeq, index: int, token: CommentToken) -> None:
    value = seq[index]
    if isinstance(value, CommentedMap):
        _attach(value, list(value)[-1], token)
    else:
        _attach_seq(value, len(value) - 1, token)


def _merge(old: CommentToken | None, new: CommentToken) -> CommentToken:
    if old is None:
        return new
    text = old.value
    extra = new.value
    if text.endswith("\n") and extra.startswith("\n"):
        extra = extra[1:]
    old.value = text + extra
    return old


def _own_comment(cm: CommentedMap, key: Any) -> CommentToken | None:
    entry = cm.ca.items.get(key)
    if entry and len(entry) > 2 and entry[2] is not None:
        return entry[2]
    return None


def _remove(cm: CommentedMap, key: Any) -> Any:
    """Delete key, keeping the comment lines that followed it (they belong to what comes next)."""
    keys = list(cm)
    index = keys.index(key)
    token = _trailing(cm[key])
    own = _own_comment(cm, key)
    if own is not None:
        # An end-of-line comment goes with the key; full comment lines after it stay.
        cut = own.value.find("\n")
        if cut >= 0 and own.value[cut:].strip():
            rest = CommentToken(own.value[cut:], own.start_mark, None)
            token = rest if token is None else _merge(token, rest)
    leading = _leading(cm, key)
    cm.ca.items.pop(key, None)
    value = cm.pop(key)
    if leading is not None:
        lines, indent = leading
        if index + 1 < len(keys):
            _comment_before(cm, keys[index + 1], lines, indent)
        elif index > 0:
            text = "".join(f"{' ' * indent}# {line}\n" for line in lines)
            _attach(cm, keys[index - 1], CommentToken("\n" + text, None, None))
    if token is not None and token.value.strip():
        if index > 0:
            _attach(cm, keys[index - 1], token)
        elif len(keys) > 1:
            # The first key went: its trailing lines now precede the new first key.
            cm.yaml_set_comment_before_after_key(
                keys[1], before="\n".join(_comment_lines(token)), indent=_indent_of(token)
            )
        else:
            # The map is empty now: whoever removes or fills it picks the lines up.
            _PENDING[id(cm)] = token
    return value


def _leading(cm: CommentedMap, key: Any) -> tuple[list[str], int] | None:
    """The comment lines between 'key:' and the first entry of its map or list value."""
    value = cm[key]
    if not isinstance(value, CommentedMap | CommentedSeq):
        return None
    tokens = (value.ca.comment[1] if value.ca.comment and len(value.ca.comment) > 1 else None) or []
    lines: list[str] = []
    indent = 0
    for token in tokens:
        if token is None:
            continue
        indent = token.start_mark.column if token.start_mark else indent
        lines += _comment_lines(token)
    return (lines, indent) if lines else None


def _comment_before(cm: CommentedMap, key: Any, lines: list[str], indent: int) -> None:
    entry = cm.ca.items.get(key)
    before = entry[1] if entry and len(entry) > 1 and entry[1] else None
    if before:
        # Keep the comment lines already there, after the moved ones.
        for token in before:
            lines = lines + _comment_lines(token)
    cm.yaml_set_comment_before_after_key(key, before="\n".join(lines), indent=indent)


def _comment_lines(token: CommentToken) -> list[str]:
    return [
        line.strip().removeprefix("#").removeprefix(" ")
        for line in token.value.split("\n")
        if line.strip()
    ]


def _indent_of(token: CommentToken) -> int:
    for line in token.value.split("\n"):
        if line.strip():
            return len(line) - len(line.lstrip())
    return 0


def _rename(cm: CommentedMap, old: str, new: str, value: Any) -> None:
    """Replace key old by new at the same position, with old's comments."""
    position = list(cm).index(old)
    entry = cm.ca.items.pop(old, None)
    del cm[old]
    cm.insert(position, new, value)
    if entry is not None:
        cm.ca.items[new] = entry


def _insert_after(cm: CommentedMap, anchors: tuple[str, ...], key: str, value: Any) -> None:
    """Insert key after the last present anchor key (at the start when none is present)."""
    keys = list(cm)
    position = 0
    for anchor in anchors:
        if anchor in cm:
            position = max(position, keys.index(anchor) + 1)
    if position and position == len(keys):
        # Inserting at the end: the comment lines after the old last value stay after it.
        token = _trailing(cm[keys[-1]]) or _pop_own_lines(cm, keys[-1])
        cm.insert(position, key, value)
        if token is not None:
            _attach(cm, key, token)
        return
    cm.insert(position, key, value)


def _pop_own_lines(cm: CommentedMap, key: Any) -> CommentToken | None:
    own = _own_comment(cm, key)
    if own is None:
        return None
    value = own.value
    cut = value.find("\n")
    if cut < 0 or not value[cut:].strip():
        return None
    own.value = value[: cut + 1]
    if not own.value.strip():
        cm.ca.items[key][2] = None
    return CommentToken(value[cut:], own.start_mark, None)
