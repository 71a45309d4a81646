"""Plugin-data writes: operations, limits, dataset checks and the in-turn overlay.

Plain Python, no Django: the commit service of the Sessions app loads the latest stored values,
calls TurnOverlay.commit and saves what it returns in one transaction. See docs/sessions.md for
the op shapes and the commit rules.

One piece, at about 800 lines: an op, its limits, the dataset checks and the overlay that
stages them are one contract with the Node twin (pluginhost/node/ops.mjs), and the parity tests
read both side by side.
"""

from __future__ import annotations

import copy
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jsonschema import exceptions as schema_exceptions
from jsonschema import validators

from catalogue.manifest.types import Manifest, thaw
from core import pointer
from sessions.errors import OperationError, WriteRefused

MAX_VALUE_BYTES = 262144
# What one package may keep in one session, over all its namespaces (docs/sessions.md, "Plugin
# data quota"): 1000 keys, and 4 MiB (16 values at the spec's one-value limit of 262144 bytes).
# A write that would pass either is refused whole with code quota-exceeded.
PLUGIN_DATA_MAX_KEYS = 1000
PLUGIN_DATA_MAX_BYTES = 4 * 1024 * 1024
QUOTA_CODE = "quota-exceeded"
OP_KINDS = ("set", "merge", "inc", "append", "insert", "remove", "upsertItem", "delete")


class _Missing:
    """The value of a key that holds nothing (never written, or deleted)."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()

# Fields each op may carry besides "op" (and "path", which every op may carry).
_FIELDS: dict[str, tuple[set[str], set[str]]] = {  # op -> (required, optional)
    "set": ({"value"}, set()),
    "merge": ({"value"}, set()),
    "inc": ({"by"}, {"min", "max"}),
    "append": ({"value"}, set()),
    "insert": ({"index", "value"}, set()),
    "remove": (set(), {"index", "match"}),
    "upsertItem": ({"value"}, {"key", "match"}),
    "delete": (set(), set()),
}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _kind(value: Any) -> str:
    if value is MISSING:
        return "nothing"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if _is_number(value):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _array_index(token: str, length: int, *, index: int, path: str) -> int:
    try:
        return pointer.array_index(token, length, pointer=path)
    except pointer.PointerError as exc:
        # The codes the Node try-run (pluginhost/node/ops.mjs) gives for the same two rules.
        code = "path-invalid" if exc.rule == "index-invalid" else "path-missing"
        raise OperationError(code, exc.message, index=index, path=path) from None


def _names_no_item(token: str, length: int, *, path: str) -> bool:
    """True for "-" and an index past the end; a token that is no index is not "no item"."""
    try:
        return pointer.array_index(token, length, pointer=path, dash=True) == length
    except pointer.PointerError as exc:
        return exc.rule == "index-past-end"


def _child(container: Any, token: str, *, index: int, path: str) -> Any:
    if isinstance(container, dict):
        return container.get(token, MISSING)
    if isinstance(container, list):
        return container[_array_index(token, len(container), index=index, path=path)]
    raise OperationError(
        "path-missing",
        f"the path goes through {_kind(container)}, not an object or array",
        index=index,
        path=path,
    )


# ----------------------------------------------------------------------------- one op


def validate_op(op: Any, *, index: int = 0) -> None:
    """Check the shape of one op (fields, types); raises OperationError."""
    if not isinstance(op, Mapping):
        raise OperationError("invalid-op", f"an op must be an object, not {_kind(op)}", index=index)
    kind = op.get("op")
    if kind not in _FIELDS:
        raise OperationError(
            "unknown-op", f"unknown op {kind!r}; the ops are {', '.join(OP_KINDS)}", index=index
        )
    required, optional = _FIELDS[kind]
    allowed = required | optional | {"op", "path"}
    extra = sorted(set(op) - allowed)
    if extra:
        raise OperationError("invalid-op", f"{kind} takes no field {extra[0]!r}", index=index)
    missing = sorted(required - set(op))
    if missing:
        raise OperationError("invalid-op", f"{kind} needs the field {missing[0]!r}", index=index)
    path = op.get("path", "")
    if not isinstance(path, str):
        raise OperationError("invalid-op", "path must be a JSON pointer string", index=index)
    try:
        pointer.parse(path)
    except pointer.PointerError as exc:
        raise OperationError("invalid-op", exc.message, index=index) from None
    if kind == "inc":
        for name in ("by", "min", "max"):
            if name in op and not (_is_number(op[name]) and math.isfinite(op[name])):
                raise OperationError(
                    "invalid-op", f"inc {name} must be a finite number", index=index
                )
        if "min" in op and "max" in op and op["min"] > op["max"]:
            raise OperationError(
                "invalid-op", f"inc min {op['min']} is above max {op['max']}", index=index
            )
    if kind == "merge" and not isinstance(op["value"], Mapping):
        raise OperationError(
            "invalid-op", f"merge value must be an object, not {_kind(op['value'])}", index=index
        )
    if kind == "insert" and not (
        isinstance(op["index"], int) and not isinstance(op["index"], bool) and op["index"] >= 0
    ):
        raise OperationError(
            "invalid-op", "insert index must be an integer of 0 or more", index=index
        )
    if kind == "remove":
        if ("index" in op) == ("match" in op):
            raise OperationError(
                "invalid-op", "remove takes exactly one of index or match", index=index
            )
        if "index" in op and not (
            isinstance(op["index"], int) and not isinstance(op["index"], bool) and op["index"] >= 0
        ):
            raise OperationError(
                "invalid-op", "remove index must be an integer of 0 or more", index=index
            )
    if kind == "upsertItem":
        if "key" in op and "match" in op:
            raise OperationError(
                "invalid-op", "upsertItem takes key or match, not both", index=index
            )
        if "key" in op and not (isinstance(op["key"], str) and op["key"]):
            raise OperationError("invalid-op", "upsertItem key must be a field name", index=index)
        if "match" in op and not isinstance(op["match"], Mapping):
            raise OperationError("invalid-op", "upsertItem match must be an object", index=index)
        if "match" not in op and not isinstance(op["value"], Mapping):
            raise OperationError(
                "invalid-op",
                "upsertItem value must be an object when the item is found by key",
                index=index,
            )


def _same(a: Any, b: Any) -> bool:
    """JSON equality: unlike Python's ==, true is not 1 (the handler's try-run in Node agrees)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _matches(item: Any, match: Any) -> bool:
    if isinstance(match, Mapping):
        return isinstance(item, dict) and all(
            k in item and _same(item[k], v) for k, v in match.items()
        )
    return _same(item, match)


def _apply_at(target: Any, op: Mapping[str, Any], *, index: int, path: str) -> Any:
    """The new value of the node the op points at (MISSING when it deletes it)."""
    kind = op["op"]
    value = copy.deepcopy(thaw(op["value"])) if "value" in op else None
    if kind == "set":
        return value
    if kind == "delete":
        return MISSING
    if kind == "merge":
        if target is MISSING or target is None:
            return value
        if not isinstance(target, dict):
            raise OperationError(
                "type-mismatch",
                f"merge needs an object here, found {_kind(target)}",
                index=index,
                path=path,
            )
        return {**target, **value}
    if kind == "inc":
        if target is MISSING or target is None:
            target = 0
        if not _is_number(target):
            raise OperationError(
                "type-mismatch",
                f"inc needs a number here, found {_kind(target)}",
                index=index,
                path=path,
            )
        result = target + op["by"]
        if "min" in op and result < op["min"]:
            raise OperationError(
                "out-of-range",
                f"inc by {op['by']} gives {result}, below min {op['min']}",
                index=index,
                path=path,
            )
        if "max" in op and result > op["max"]:
            raise OperationError(
                "out-of-range",
                f"inc by {op['by']} gives {result}, above max {op['max']}",
                index=index,
                path=path,
            )
        return result
    # The array ops.
    if target is MISSING or target is None:
        target = []
    if not isinstance(target, list):
        raise OperationError(
            "type-mismatch",
            f"{kind} needs an array here, found {_kind(target)}",
            index=index,
            path=path,
        )
    items = list(target)
    if kind == "append":
        return [*items, value]
    if kind == "insert":
        if op["index"] > len(items):
            raise OperationError(
                "index-out-of-range",
                f"insert index {op['index']} is past the end of an array of {len(items)}",
                index=index,
                path=path,
            )
        items.insert(op["index"], value)
        return items
    if kind == "remove":
        if "index" in op:
            if op["index"] >= len(items):
                raise OperationError(
                    "index-out-of-range",
                    f"remove index {op['index']} is past the end of an array of {len(items)}",
                    index=index,
                    path=path,
                )
            del items[op["index"]]
            return items
        return [item for item in items if not _matches(item, op["match"])]
    # upsertItem
    if "match" in op:
        found = next((i for i, item in enumerate(items) if _matches(item, op["match"])), None)
    else:
        key = op.get("key", "id")
        if key not in value:
            raise OperationError(
                "invalid-op",
                f"upsertItem value has no {key!r} field to find the item by",
                index=index,
                path=path,
            )
        found = next(
            (
                i
                for i, item in enumerate(items)
                if isinstance(item, dict) and key in item and _same(item[key], value[key])
            ),
            None,
        )
    if found is None:
        return [*items, value]
    items[found] = value
    return items


def apply_op(current: Any, op: Mapping[str, Any], *, index: int = 0) -> Any:
    """Apply one op to a value (MISSING when the key holds nothing); returns the new value.

    Never changes current: the result shares nothing with it.
    """
    validate_op(op, index=index)
    tokens = pointer.parse(op.get("path", ""))
    if not tokens:
        return _apply_at(current, op, index=index, path="")
    root = copy.deepcopy(current)
    if root is MISSING:
        raise OperationError(
            "path-missing",
            "the key holds nothing, so there is no member to change",
            index=index,
            path=op["path"],
        )
    parent = root
    for depth, token in enumerate(tokens[:-1]):
        parent = _child(parent, token, index=index, path=pointer.format(tokens[: depth + 1]))
        if parent is MISSING:
            raise OperationError(
                "path-missing",
                "this member does not exist",
                index=index,
                path=pointer.format(tokens[: depth + 1]),
            )
    last = tokens[-1]
    if isinstance(parent, dict):
        new = _apply_at(parent.get(last, MISSING), op, index=index, path=op["path"])
        if new is MISSING:
            parent.pop(last, None)
        else:
            parent[last] = new
    elif isinstance(parent, list):
        if op["op"] == "delete" and _names_no_item(last, len(parent), path=op["path"]):
            return root  # deleting what is not there changes nothing
        position = _array_index(last, len(parent), index=index, path=op["path"])
        new = _apply_at(parent[position], op, index=index, path=op["path"])
        if new is MISSING:
            del parent[position]
        else:
            parent[position] = new
    else:
        raise OperationError(
            "path-missing",
            f"the path goes through {_kind(parent)}, not an object or array",
            index=index,
            path=pointer.format(tokens[:-1]),
        )
    return root


def apply_ops(current: Any, ops: Iterable[Mapping[str, Any]]) -> Any:
    """Apply a list of ops in order, all or nothing; returns the new value (MISSING = deleted).

    Raises OperationError naming the failing op; current is never changed.
    """
    ops = list(ops)
    if not ops:
        raise OperationError("invalid-op", "the list of ops is empty")
    value = current
    for index, op in enumerate(ops):
        value = apply_op(value, op, index=index)
    return value


def proposal_ops(payload: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The ops of a plugin.data proposal payload: {namespace, key, value} is a set, else its ops."""
    has_value, has_ops = "value" in payload, "ops" in payload
    if has_value == has_ops:
        raise OperationError(
            "invalid-op", "a plugin.data write carries exactly one of value or ops"
        )
    if has_value:
        return [{"op": "set", "value": payload["value"]}]
    ops = payload["ops"]
    if not isinstance(ops, list | tuple) or not ops:
        raise OperationError("invalid-op", "ops must be a non-empty list")
    for index, op in enumerate(ops):
        validate_op(op, index=index)
    return list(ops)


# ----------------------------------------------------------------------------- size and datasets


def value_size(value: Any) -> int:
    """Bytes of the value as stored: compact UTF-8 JSON."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


@dataclass(frozen=True)
class Dataset:
    """A typed namespace of a package (contributes.datasets.<name>)."""

    name: str
    schema: Mapping[str, Any]
    key: str | None = None
    ops: frozenset[str] = frozenset(OP_KINDS)

    def validator(self) -> Any:
        cls = validators.validator_for(self.schema)
        return cls(self.schema)


def datasets_of(manifest: Manifest) -> dict[str, Dataset]:
    """The datasets of a package, with their JSON Schemas read from the package folder.

    A schema that cannot be read makes every write to its dataset refused (schema-unavailable)
    rather than unchecked.
    """
    found: dict[str, Dataset] = {}
    for name, decl in thaw(manifest.contributes.get("datasets", {})).items():
        schema_path = os.path.normpath(os.path.join(manifest.path, decl["schema"]))
        try:
            with open(schema_path, encoding="utf-8") as handle:
                schema = json.load(handle)
        except (OSError, ValueError) as exc:
            schema = {"not": {}, "description": f"schema unavailable: {exc}"}
        found[name] = Dataset(
            name=name,
            schema=schema,
            key=decl.get("key"),
            ops=frozenset(decl.get("ops") or OP_KINDS),
        )
    return found


def check_value(
    *,
    plugin: str,
    namespace: str,
    key: str,
    value: Any,
    dataset: Dataset | None,
) -> None:
    """The commit rules for one result: size limit, dataset schema and key. Raises WriteRefused."""
    if value is MISSING:
        return
    size = value_size(value)
    if size > MAX_VALUE_BYTES:
        raise WriteRefused(
            plugin=plugin,
            namespace=namespace,
            key=key,
            code="value-too-large",
            message=f"the value is {size} bytes; one plugin data value is at most {MAX_VALUE_BYTES} bytes",
        )
    if dataset is None:
        return
    try:
        error = schema_exceptions.best_match(dataset.validator().iter_errors(value))
    except schema_exceptions.SchemaError as exc:
        raise WriteRefused(
            plugin=plugin,
            namespace=namespace,
            key=key,
            code="schema-invalid",
            message=f"the schema of dataset {namespace} is not a valid JSON Schema: {exc.message}",
        ) from None
    if error is not None:
        where = pointer.format(error.absolute_path)
        raise WriteRefused(
            plugin=plugin,
            namespace=namespace,
            key=key,
            code="schema-mismatch",
            message=f"the record does not match the schema of dataset {namespace} at {where or '/'}: {error.message}",
            path=where,
        )
    if dataset.key is not None and isinstance(value, dict) and value.get(dataset.key) != key:
        raise WriteRefused(
            plugin=plugin,
            namespace=namespace,
            key=key,
            code="key-mismatch",
            message=f"the record's {dataset.key} is {value.get(dataset.key)!r}, but it is stored under key {key!r}",
            path=pointer.format([dataset.key]),
        )


def check_quota(*, plugin: str, namespace: str, key: str, keys: int, size: int) -> None:
    """Raise WriteRefused when a package would hold more than its quota in one session."""
    if keys <= PLUGIN_DATA_MAX_KEYS and size <= PLUGIN_DATA_MAX_BYTES:
        return
    raise WriteRefused(
        plugin=plugin,
        namespace=namespace,
        key=key,
        code=QUOTA_CODE,
        message=(
            f"package {plugin} would keep {keys} keys and {size} bytes of plugin data in this "
            f"session; a package may keep at most {PLUGIN_DATA_MAX_KEYS} keys and "
            f"{PLUGIN_DATA_MAX_BYTES} bytes per session (delete keys it no longer needs)"
        ),
    )


def stored_size(value: Any) -> int:
    """Bytes a value takes in the quota (PluginData.size); a key that holds nothing takes none."""
    return 0 if value is MISSING else value_size(value)


def write_value(
    current: Any,
    ops: Sequence[Mapping[str, Any]],
    *,
    plugin: str,
    namespace: str,
    key: str,
    dataset: Dataset | None = None,
) -> Any:
    """Apply ops to the current value and check the result; raises WriteRefused, never partial."""
    if dataset is not None:
        for index, op in enumerate(ops):
            kind = op.get("op") if isinstance(op, Mapping) else None
            if kind not in dataset.ops:
                raise WriteRefused(
                    plugin=plugin,
                    namespace=namespace,
                    key=key,
                    code="op-not-allowed",
                    message=f"op {index} ({kind}) is not allowed on dataset {namespace}; "
                    f"it allows {', '.join(sorted(dataset.ops))}",
                )
    try:
        value = apply_ops(current, ops)
    except OperationError as exc:
        raise WriteRefused(
            plugin=plugin,
            namespace=namespace,
            key=key,
            code=exc.code,
            message=str(exc),
            path=exc.path,
        ) from None
    check_value(plugin=plugin, namespace=namespace, key=key, value=value, dataset=dataset)
    return value


# ----------------------------------------------------------------------------- the overlay

Loader = Callable[[str, str, str], Any]  # (plugin, namespace, key) -> stored value or MISSING
Lister = Callable[[str, str], Mapping[str, Any]]  # (plugin, namespace) -> {key: stored value}
Usage = Callable[[str], tuple[int, int]]  # plugin -> (keys, bytes) it keeps in the session now


@dataclass(frozen=True)
class StagedWrite:
    """One write a runtime asked for: ops on (plugin, namespace, key), in staging order."""

    seq: int
    runtime: str
    plugin: str
    namespace: str
    key: str
    ops: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class ReadRecord:
    """One read inside the turn: which runtime read which key, and whose staged writes it saw."""

    runtime: str
    plugin: str
    namespace: str
    key: str
    saw: tuple[str, ...]  # runtimes whose uncommitted writes were part of the value read


CASCADE_WHY = {
    "write-refused": "whose write was refused",
    "hook-vetoed": "whose writes a PreStateCommit hook vetoed",
}


@dataclass(frozen=True)
class Dropped:
    runtime: str
    code: str  # "write-refused", "hook-vetoed" or "read-refused-write"
    message: str


@dataclass(frozen=True)
class CommitResult:
    """What to save: the final value of each touched key (MISSING = delete the row)."""

    values: Mapping[tuple[str, str, str], Any]
    refusals: tuple[WriteRefused, ...]
    dropped: tuple[Dropped, ...]  # runtimes whose writes were not saved, with why
    kept: tuple[str, ...]  # runtimes whose writes were saved

    @property
    def ok(self) -> bool:
        return not self.refusals


@dataclass
class TurnOverlay:
    """The plugin data a turn's runtimes see and stage, before the turn commits.

    A runtime reads the stored value plus the writes of earlier *completed* runtimes of the same
    plugin and its own earlier writes; each read that saw another runtime's write is recorded, so
    that a write refused at commit also drops the runtimes that read it (the story excepted).
    """

    load: Loader
    datasets: Mapping[str, Mapping[str, Dataset]] = field(default_factory=dict)
    lister: Lister | None = None
    # The committed use of each package, for the quota; None (offline cases) checks no quota.
    usage: Usage | None = None
    writes: list[StagedWrite] = field(default_factory=list)
    completed: list[str] = field(default_factory=list)  # succeeded runtimes, in completion order
    failed: set[str] = field(default_factory=set)
    vetoed: dict[str, str] = field(default_factory=dict)  # runtime -> why a hook vetoed it
    readers: dict[str, set[str]] = field(
        default_factory=dict
    )  # reader runtime -> runtimes it read from
    owners: dict[str, str] = field(default_factory=dict)  # runtime -> plugin
    read_log: list[ReadRecord] = field(default_factory=list)  # every read, for the turn's trace

    def _dataset(self, plugin: str, namespace: str) -> Dataset | None:
        return self.datasets.get(plugin, {}).get(namespace)

    def _visible(self, runtime: str, plugin: str) -> list[StagedWrite]:
        done = set(self.completed)
        return [
            w
            for w in self.writes
            if w.plugin == plugin and (w.runtime == runtime or w.runtime in done)
        ]

    def _value(self, *, runtime: str, plugin: str, namespace: str, key: str, record: bool) -> Any:
        value = self.load(plugin, namespace, key)
        order = {name: i for i, name in enumerate(self.completed)}
        # Completed runtimes' writes in completion order, then the reader's own.
        staged = sorted(
            (
                w
                for w in self._visible(runtime, plugin)
                if w.namespace == namespace and w.key == key
            ),
            key=lambda w: (order.get(w.runtime, len(order)), w.seq),
        )
        sources: list[str] = []
        for write in staged:
            try:
                value = apply_ops(value, write.ops)
            except OperationError:
                # The stored value moved under it (a background commit): the commit will refuse
                # this write, so the reader sees the value without it and depends on nothing.
                continue
            if write.runtime != runtime and write.runtime not in sources:
                sources.append(write.runtime)
        if record:
            if sources:
                self.readers.setdefault(runtime, set()).update(sources)
            self.read_log.append(ReadRecord(runtime, plugin, namespace, key, tuple(sources)))
        return value

    def get(self, *, runtime: str, plugin: str, namespace: str, key: str) -> Any:
        """ctx.pluginData.get: the value this runtime sees (None when the key holds nothing)."""
        self.owners.setdefault(runtime, plugin)
        value = self._value(
            runtime=runtime, plugin=plugin, namespace=namespace, key=key, record=True
        )
        return None if value is MISSING else copy.deepcopy(value)

    def list(self, *, runtime: str, plugin: str, namespace: str) -> list[dict[str, Any]]:
        """ctx.store.listPluginData: every key of the namespace as this runtime sees it, by key."""
        self.owners.setdefault(runtime, plugin)
        keys = set(self.lister(plugin, namespace)) if self.lister else set()
        keys |= {w.key for w in self._visible(runtime, plugin) if w.namespace == namespace}
        rows = []
        for key in sorted(keys):
            value = self._value(
                runtime=runtime, plugin=plugin, namespace=namespace, key=key, record=True
            )
            if value is not MISSING:
                rows.append({"key": key, "value": copy.deepcopy(value)})
        return rows

    def stage(
        self,
        *,
        runtime: str,
        plugin: str,
        namespace: str,
        key: str,
        ops: Sequence[Mapping[str, Any]],
    ) -> Any:
        """ctx.pluginData.set/update: try the ops on the value this runtime sees, then stage them.

        Raises WriteRefused (and stages nothing) when they fail now; returns the new value.
        """
        self.owners.setdefault(runtime, plugin)
        ops = tuple(copy.deepcopy(thaw(op)) for op in ops)
        current = self._value(
            runtime=runtime, plugin=plugin, namespace=namespace, key=key, record=True
        )
        value = write_value(
            current,
            ops,
            plugin=plugin,
            namespace=namespace,
            key=key,
            dataset=self._dataset(plugin, namespace),
        )
        self.writes.append(StagedWrite(len(self.writes), runtime, plugin, namespace, key, ops))
        return value

    def set(self, *, runtime: str, plugin: str, namespace: str, key: str, value: Any) -> Any:
        return self.stage(
            runtime=runtime,
            plugin=plugin,
            namespace=namespace,
            key=key,
            ops=[{"op": "set", "value": value}],
        )

    def record_dependency(self, *, reader: str, source: str) -> None:
        """The executor's note that reader consumed source's result (a turn-scoped input)."""
        if reader != source:
            self.readers.setdefault(reader, set()).add(source)

    def complete(self, runtime: str, *, succeeded: bool) -> None:
        """A runtime finished. A failed runtime's writes are never seen again, nor saved."""
        if succeeded:
            if runtime not in self.completed:
                self.completed.append(runtime)
        else:
            self.failed.add(runtime)
            self.writes = [w for w in self.writes if w.runtime != runtime]

    def veto(self, runtime: str, message: str) -> None:
        """A PreStateCommit hook vetoed runtime's writes: they are thrown away like a failed
        runtime's, and at the commit its readers drop as a refused write's do (Covel drops every
        runtime that hard-depends on a dropped one)."""
        self.complete(runtime, succeeded=False)
        self.vetoed[runtime] = message

    def discard_since(self, mark: int) -> None:
        """Forget every write staged since len(writes) was mark: a nested run that did not
        succeed (ctx.recursiveCall; runtimes run one at a time, so they were all its own)."""
        del self.writes[mark:]

    def commit(
        self, *, load_latest: Loader | None = None, story: Iterable[str] = ()
    ) -> CommitResult:
        """Apply every completed runtime's writes to the latest stored values.

        Each runtime's writes apply all or nothing, in completion order. A refused write drops its
        runtime, and every runtime that read from a dropped one is dropped too, except the story
        runtimes, whose writes are still checked on their own. Repeats until nothing more drops.
        """
        load = load_latest or self.load
        story_set = set(story)
        runtimes = [r for r in self.completed if r not in self.failed]
        dropped: dict[str, Dropped] = {}
        refusals: dict[str, WriteRefused] = {}
        latest: dict[tuple[str, str, str], Any] = {}
        # Vetoed runtimes are reported by the caller already; here they only seed the cascade.
        vetoed = {r: Dropped(r, "hook-vetoed", why) for r, why in self.vetoed.items()}
        dropped.update(vetoed)
        self._cascade(dropped, story_set)
        used: dict[str, tuple[int, int]] = {}  # plugin -> committed (keys, bytes), read once
        while True:
            values: dict[tuple[str, str, str], Any] = {}
            new_drop = False
            for runtime in runtimes:
                if runtime in dropped:
                    continue
                own = [w for w in self.writes if w.runtime == runtime]
                trial = dict(values)
                try:
                    for write in own:
                        where = (write.plugin, write.namespace, write.key)
                        if where not in latest:
                            latest[where] = load(*where)
                        current = trial.get(where, latest[where])
                        trial[where] = write_value(
                            current,
                            write.ops,
                            plugin=write.plugin,
                            namespace=write.namespace,
                            key=write.key,
                            dataset=self._dataset(write.plugin, write.namespace),
                        )
                    self._check_quotas(own, trial, latest, used)
                except WriteRefused as exc:
                    refusals[runtime] = exc
                    dropped[runtime] = Dropped(runtime, "write-refused", str(exc))
                    new_drop = True
                    break  # values computed so far may have been read from it: start again
                values = trial
            if new_drop:
                self._cascade(dropped, story_set)
                continue
            break
        kept = tuple(r for r in runtimes if r not in dropped)
        return CommitResult(
            values=values,
            refusals=tuple(refusals.values()),
            dropped=tuple(dropped[r] for r in runtimes if r in dropped and r not in vetoed),
            kept=kept,
        )

    def _check_quotas(
        self,
        own: list[StagedWrite],
        trial: Mapping[tuple[str, str, str], Any],
        latest: Mapping[tuple[str, str, str], Any],
        used: dict[str, tuple[int, int]],
    ) -> None:
        """Refuse a runtime's writes (all of them) when, with every write kept so far, a package
        it wrote would pass its quota. Shrinking writes pass even over the quota."""
        if self.usage is None or not own:
            return
        last = {w.plugin: w for w in own}
        for plugin, write in last.items():
            if plugin not in used:
                used[plugin] = self.usage(plugin)
            keys, size = used[plugin]
            grew = False
            for where, value in trial.items():
                if where[0] != plugin:
                    continue
                before = latest[where]
                keys += (value is not MISSING) - (before is not MISSING)
                delta = stored_size(value) - stored_size(before)
                size += delta
                grew = grew or delta > 0 or (before is MISSING and value is not MISSING)
            if grew:
                check_quota(
                    plugin=plugin, namespace=write.namespace, key=write.key, keys=keys, size=size
                )

    def _cascade(self, dropped: dict[str, Dropped], story: set[str]) -> None:
        changed = True
        while changed:
            changed = False
            for reader, sources in sorted(self.readers.items()):
                if reader in dropped or reader in story:
                    continue
                culprit = sorted(s for s in sources if s in dropped)
                if culprit:
                    dropped[reader] = Dropped(
                        reader,
                        "read-refused-write",
                        f"{reader} used data or a result of {culprit[0]}, "
                        + CASCADE_WHY.get(dropped[culprit[0]].code, "which was dropped in turn"),
                    )
                    changed = True
