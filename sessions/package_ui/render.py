"""A spec's component tree and its state, as plain nodes our templates draw.

What the tree may say is Covel's json-render dialect (learned from its packages' ui/*.json and
its UI guide, docs/guide/plugin-ui-runtime-guidelines.md): an element is {component, props,
children, repeat, visible}; a prop is a literal, a {zh, en} text, {"$state": "/pointer"} (into
the spec's state), {"$item": "a/b"} (into the current repeat item) or {"$index": true};
`visible` is such a value (shown when truthy, as JavaScript judges it) or {…, "eq"/"neq": x},
{"not": true}, {"$and": […]}, {"$or": […]}; `repeat` {statePath, key} draws the element once and
its children once per item of the list at statePath.

Nothing from the package reaches the page as markup: a node carries text (escaped by the
template), numbers, and classes chosen from our own lists (a prop value outside them is
dropped). An unknown component or a malformed binding becomes a small named placeholder node
instead of failing the page. Depth, node count and repeat length are bounded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core import pointer

MAX_DEPTH = 24
MAX_NODES = 3000
MAX_REPEAT = 200
MAX_TEXT = 4000

LOCALE_KEY = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")

GAPS = {"none", "xs", "sm", "md", "lg", "xl"}
ALIGNS = {"start", "center", "end", "baseline", "stretch"}
SIZES = {"xs", "sm", "md", "lg", "xl"}
WEIGHTS = {"normal", "medium", "semibold", "bold"}
TEXT_VARIANTS = {"default", "muted", "subtle", "accent", "danger", "success", "warning"}
CARD_VARIANTS = {"default", "subtle", "outline", "elevated"}
COLORS = {
    "gray", "slate", "neutral", "red", "rose", "orange", "amber", "yellow", "green",
    "emerald", "teal", "cyan", "blue", "indigo", "violet", "purple", "pink",
}  # fmt: skip
# Icon names Covel's packages use (lucide names), drawn as characters of our own: no image.
ICONS = {
    "heart": "♥", "dices": "⚄", "dice": "⚄", "sparkles": "✦", "star": "★", "scroll-text": "☰",
    "scroll": "☰", "compass": "◈", "check-circle-2": "✓", "check-circle": "✓", "check": "✓",
    "x-circle": "✕", "x": "✕", "alert-triangle": "⚠", "triangle-alert": "⚠", "info": "ℹ",
    "book": "▤", "book-open": "▤", "user": "☺", "users": "☺", "clock": "◷", "map": "▦",
    "map-pin": "⌖", "sword": "⚔", "swords": "⚔", "shield": "⛨", "flame": "♨", "gem": "◆",
    "coins": "◎", "package": "▣", "backpack": "▣", "message-square": "✉", "sun": "☀",
    "moon": "☾", "cloud": "☁", "zap": "ϟ", "flag": "⚑", "music": "♪", "eye": "◉",
}  # fmt: skip
CONTAINERS = {
    "Stack": "stack",
    "Row": "row",
    "Grid": "grid",
    "CardList": "cardlist",
    "List": "list",
}


class BadBinding(Exception):
    """A binding the spec wrote wrongly: its message says where and why."""


@dataclass
class Scope:
    state: Any
    locale: str
    item: Any = None
    index: int | None = None
    in_repeat: bool = False
    nodes: list[int] = field(default_factory=lambda: [0])  # shared counter
    data: Any = None  # what $data reads: the data source's row {key, value}, else the state


# ------------------------------------------------------------------ values


def is_locale_map(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(isinstance(k, str) and LOCALE_KEY.match(k) for k in value)
        and all(isinstance(v, str) for v in value.values())
    )


def localized(value: Mapping[str, str], locale: str) -> str:
    """A {zh, en} text in the session's language: the locale, its language, English, else the
    first one written."""
    for key in (locale, locale.split("-")[0], "en"):
        if key in value:
            return value[key]
    return next(iter(value.values()))


def _item_path(item: Any, path: str) -> Any:
    value = item
    for token in [t for t in path.split("/") if t != ""]:
        if isinstance(value, Mapping):
            value = value.get(token)
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            return None
    return value


def _state_path(state: Any, where: str) -> Any:
    try:
        pointer.parse(where)
    except pointer.PointerError as error:
        raise BadBinding(f"$state {where!r} is not a JSON pointer ({error})") from None
    try:
        return pointer.resolve(state, where)
    except pointer.PointerError:
        return None  # a missing member shows as nothing, as in Covel


def resolve(value: Any, scope: Scope) -> Any:
    """A prop value with its binding applied and its {zh, en} text chosen."""
    if isinstance(value, Mapping):
        if "$state" in value:
            where = value["$state"]
            if not isinstance(where, str):
                raise BadBinding("$state must be a string pointer")
            return _localize(_state_path(scope.state, where), scope.locale)
        if "$item" in value:
            path = value["$item"]
            if not isinstance(path, str):
                raise BadBinding("$item must be a string path")
            if not scope.in_repeat:
                raise BadBinding(f"$item {path!r} is used outside a repeat")
            return _localize(_item_path(scope.item, path), scope.locale)
        if "$data" in value or "$event" in value or "$segment" in value:
            # The hub's bundled specs bind the data-source row ($data: "value/place"), a
            # message block's triggering event payload ($event: "delta") and a story segment
            # ($segment: "content") with these.
            name = next(n for n in ("$data", "$event", "$segment") if n in value)
            path = value[name]
            if not isinstance(path, str):
                raise BadBinding(f"{name} must be a string path")
            source = scope.data if name == "$data" else scope.state
            return _localize(_item_path(source, path), scope.locale)
        if "$index" in value:
            if not scope.in_repeat:
                raise BadBinding("$index is used outside a repeat")
            return scope.index
        unknown = [k for k in value if isinstance(k, str) and k.startswith("$")]
        if unknown:
            raise BadBinding(f"{unknown[0]} is not a binding this page knows")
        if is_locale_map(value):
            return localized(value, scope.locale)
    return value


def _localize(value: Any, locale: str) -> Any:
    return localized(value, locale) if is_locale_map(value) else value


def text_of(value: Any) -> str:
    """A value as the page shows it: text, numbers as JavaScript prints them, else JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str | int | float):
        text = str(value)
    else:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text[:MAX_TEXT]


def truthy(value: Any) -> bool:
    """JavaScript's truthiness: an empty list or object is true, 0 and "" are false."""
    if isinstance(value, list | tuple | Mapping):
        return True
    return bool(value)


def visible(condition: Any, scope: Scope) -> bool:
    if condition is None:
        return True
    if isinstance(condition, bool):
        return condition
    if isinstance(condition, Mapping) and ("$and" in condition or "$or" in condition):
        parts = condition.get("$and", condition.get("$or"))
        if not isinstance(parts, list):
            raise BadBinding("$and/$or must be a list of conditions")
        results = [visible(p, scope) for p in parts]
        return all(results) if "$and" in condition else any(results)
    if isinstance(condition, Mapping):
        binding = {k: v for k, v in condition.items() if k.startswith("$")}
        value = resolve(binding, scope) if binding else None
        if "eq" in condition:
            shown = value == resolve(condition["eq"], scope)
        elif "neq" in condition:
            shown = value != resolve(condition["neq"], scope)
        else:
            shown = truthy(value)
        return not shown if condition.get("not") is True else shown
    return truthy(condition)


# ------------------------------------------------------------------ nodes


def _cls(prefix: str, value: Any, allowed: set[str]) -> str:
    return f"{prefix}-{value}" if isinstance(value, str) and value in allowed else ""


def _classes(*names: str) -> str:
    return " ".join(n for n in names if n)


def placeholder(name: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": "placeholder", "name": name, "reason": reason, "text": message[:300]}


def render(element: Any, scope: Scope, depth: int = 0) -> list[dict[str, Any]]:
    """The nodes one element draws: none when hidden, one otherwise (a placeholder on error)."""
    scope.nodes[0] += 1
    if depth > MAX_DEPTH or scope.nodes[0] > MAX_NODES:
        return [placeholder("view", "too-large", "This view is too large or too deep to show.")]
    if not isinstance(element, Mapping):
        return [placeholder("element", "bad-element", "An element of this view is not an object.")]
    name = element.get("component", element.get("type"))
    name = name if isinstance(name, str) else ""
    try:
        if not visible(element.get("visible"), scope):
            return []
        props = element.get("props") if isinstance(element.get("props"), Mapping) else {}
        if "__missing" in props:
            return [
                placeholder(
                    name, "bad-element", f"The view names a missing element {props['__missing']!r}."
                )
            ]
        node = _component(name, element, props, scope, depth)
    except BadBinding as error:
        return [placeholder(name or "element", "bad-binding", f"{name or 'An element'}: {error}")]
    return [node]


def _children(element: Mapping[str, Any], scope: Scope, depth: int) -> list[dict[str, Any]]:
    children = element.get("children")
    children = children if isinstance(children, list) else []
    repeat = element.get("repeat")
    if repeat is None:
        return [n for child in children for n in render(child, scope, depth + 1)]
    if not isinstance(repeat, Mapping):
        raise BadBinding("repeat must be an object with a statePath")
    where = repeat.get("statePath")
    if isinstance(where, str):
        items = _state_path(scope.state, where)
    elif isinstance(where, Mapping) and "$item" in where:
        items = resolve(where, scope)
    else:
        raise BadBinding("repeat.statePath must be a pointer or an $item path")
    drawn = []
    for index, item in enumerate(items if isinstance(items, list) else []):
        if index >= MAX_REPEAT:
            break
        inner = Scope(scope.state, scope.locale, item, index, True, scope.nodes, scope.data)
        drawn.extend(n for child in children for n in render(child, inner, depth + 1))
    return drawn


def _prop(props: Mapping[str, Any], scope: Scope, *names: str) -> Any:
    for name in names:
        if name in props:
            return resolve(props[name], scope)
    return None


def _component(
    name: str, element: Mapping[str, Any], props: Mapping[str, Any], scope: Scope, depth: int
) -> dict[str, Any]:
    if name in CONTAINERS:
        kind = CONTAINERS[name]
        layout = _classes(
            _cls("gap", _prop(props, scope, "gap"), GAPS),
            _cls("align", _prop(props, scope, "align"), ALIGNS),
            _cls("cols", str(_prop(props, scope, "columns")), {"1", "2", "3", "4"}),
        )
        return {"type": kind, "classes": layout, "children": _children(element, scope, depth)}
    if name == "Card":
        title = _prop(props, scope, "title")
        return {
            "type": "card",
            "classes": _cls("variant", _prop(props, scope, "variant"), CARD_VARIANTS),
            "title": text_of(title),
            "children": _children(element, scope, depth),
        }
    if name in ("Text", "Heading"):
        text = text_of(_prop(props, scope, "content", "text", "children"))
        classes = _classes(
            _cls("size", _prop(props, scope, "size"), SIZES),
            _cls("weight", _prop(props, scope, "weight"), WEIGHTS),
            _cls("variant", _prop(props, scope, "variant"), TEXT_VARIANTS),
        )
        if name == "Heading":
            level = _prop(props, scope, "level")
            level = level if level in (1, 2, 3, 4) else 3
            return {
                "type": "heading",
                "text": text,
                "level": level + 1 if level < 4 else 4,
                "classes": classes,
            }
        return {"type": "text", "text": text, "classes": classes}
    return _leaf(name, element, props, scope, depth)


def _leaf(
    name: str, element: Mapping[str, Any], props: Mapping[str, Any], scope: Scope, depth: int
) -> dict[str, Any]:
    if name == "Badge":
        label = text_of(_prop(props, scope, "label", "text", "content"))
        color = _prop(props, scope, "color", "variant")
        return {
            "type": "badge",
            "text": label,
            "classes": _cls("tone", color, COLORS) or "tone-neutral",
        }
    if name == "Icon":
        icon = _prop(props, scope, "name")
        icon = icon if isinstance(icon, str) else ""
        return {
            "type": "icon",
            "name": icon[:60],
            "glyph": ICONS.get(icon, "•"),
            "classes": _cls("size", _prop(props, scope, "size"), SIZES),
        }
    if name in ("Progress", "Meter"):
        return _progress(props, scope)
    if name == "Callout":
        icon = _prop(props, scope, "icon")
        return {
            "type": "card",
            "classes": "variant-subtle",
            "title": "",
            "children": [
                {
                    "type": "icon",
                    "name": str(icon or "")[:60],
                    "glyph": ICONS.get(icon, "•"),
                    "classes": "",
                },
                {
                    "type": "text",
                    "text": text_of(_prop(props, scope, "content", "text")),
                    "classes": "",
                },
            ],
        }
    if name in ("Divider", "Separator"):
        return {"type": "divider"}
    if name == "Button":
        # Buttons call the package's actions in Covel's client; this page has no action bridge
        # for spec buttons yet, so the button is drawn as an inert label.
        label = text_of(_prop(props, scope, "label", "text", "content"))
        return {"type": "button", "text": label}
    if name == "EntryCard":
        return _entry(lambda *n: _prop(props, scope, *n))
    if name == "FilterContainer":
        return _filter_container(props, scope)
    if name == "KeyValue":
        return {
            "type": "keyvalue",
            "label": text_of(_prop(props, scope, "label")),
            "text": text_of(_prop(props, scope, "value", "content")),
        }
    shown = name or "(none)"
    return placeholder(shown, "unknown-component", f"Unknown component {shown!r}.")


def _number(value: Any) -> float | int | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _progress(props: Mapping[str, Any], scope: Scope) -> dict[str, Any]:
    """Progress (0..max) and Meter (min..max, shifted to start at 0 for the <meter>)."""
    low = _number(_prop(props, scope, "min")) or 0
    top = _number(_prop(props, scope, "max"))
    top = top - low if top is not None and top > low else 100
    value = _number(_prop(props, scope, "value"))
    value = 0 if value is None else max(0, min(value - low, top))
    label = _prop(props, scope, "label")
    return {"type": "progress", "value": value, "max": top, "text": text_of(label)}


def _entry(get: Any) -> dict[str, Any]:
    tags = get("tags")
    return {
        "type": "entry",
        "title": text_of(get("title")),
        "category": text_of(get("category")),
        "text": text_of(get("content")),
        "tags": [text_of(t) for t in tags[:20]] if isinstance(tags, list) else [],
    }


def _filter_container(props: Mapping[str, Any], scope: Scope) -> dict[str, Any]:
    """Covel's searchable list, drawn as its full list of entry cards (no search on this page)."""
    items = _prop(props, scope, "items")
    mapping = props.get("itemPropMap") if isinstance(props.get("itemPropMap"), Mapping) else {}
    cards = []
    for item in (items if isinstance(items, list) else [])[:MAX_REPEAT]:

        def get(*names: str, item: Any = item) -> Any:
            for n in names:
                if isinstance(mapping.get(n), str):
                    return _localize(_item_path(item, mapping[n]), scope.locale)
            return None

        cards.append(_entry(get))
    footer = _prop(props, scope, "footer")
    footer = text_of(footer).replace("{{count}}", str(len(cards))) if footer else ""
    empty = text_of(_prop(props, scope, "emptyMessage")) if not cards else ""
    return {"type": "entries", "children": cards, "footer": footer, "empty": empty}


def render_view(view: Any, state: Any, locale: str, data: Any = None) -> list[dict[str, Any]]:
    """The nodes of a spec's view over its state, in the session's locale."""
    return render(view, Scope(state=state, locale=locale, data=state if data is None else data))
