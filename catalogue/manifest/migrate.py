"""plugin_migrate: rewrite a package in Covel's previous manifest format into the spec's format.

Plain Python like the loader (no Django). The rewrite is a plan first (`migrate_plan`): every
changed manifest file's old and new text, renames (`runtimes/<id>/PLUGIN.md` → `RUNTIME.md`),
new locale files, what was done (notes), what cannot be mapped (refusals) and the contracts the
package requires that the hub has in no or only another major (reports, never rewritten).
`migrate_apply` writes a plan all or nothing.

The YAML is edited with ruamel's round-trip mode so comments, key order and quoting stay as
written; only the fields that change are touched. Before the round-trip parse each frontmatter
goes through the loader's safe parser, so aliases, tags and duplicate keys are refused exactly
as the loader refuses them. Code files are never opened for writing.
"""

from __future__ import annotations

import difflib
import io
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError
from ruamel.yaml.tokens import CommentToken

from catalogue.manifest.frontmatter import split_markdown
from catalogue.manifest.loader import HOST_VERSION, load_package
from catalogue.manifest.types import Issue, LoadResult
from core.pointer import join

PLUGIN_FILE = "PLUGIN.md"
RUNTIME_FILE = "RUNTIME.md"
RUNTIMES_DIR = "runtimes"
LOCALES_DIR = "locales"

# Codes of a refusal (the package is left as it is) and of a report.
REFUSED = "migrate-refused"
CONTRACT_MISSING = "contract-not-installed"

_LOCALE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")
_VARIANT = re.compile(r"^PLUGIN\.([a-z]{2,3}(?:-[A-Za-z0-9]{2,8})*)\.md$")
_CONTRACT = re.compile(r"^([a-z][a-z0-9.-]*)@([1-9][0-9]*)$")
# The text fields whose previous form could be a locale map ({en: ..., zh: ...}).
_TEXT_KEYS = frozenset(
    {"displayName", "description", "label", "title", "summary", "about", "placeholder"}
)
# How a translated list entry names the canonical entry (the loader's identity keys).
_IDENTITY_KEYS = ("name", "key", "value", "topic", "id", "url")
# Covel's previous reader kinds and the path forms the spec reads the same way.
_SOURCE_KINDS = {"yaml": (".yaml", ".yml"), "json": (".json",), "media": ("",)}


@dataclass(frozen=True)
class FileChange:
    """One file the migration writes: old_path None = a new file; old != new = a rename."""

    old_path: str | None
    new_path: str
    old_text: str
    new_text: str

    @property
    def action(self) -> str:
        if self.old_path is None:
            return "create"
        return "rename" if self.old_path != self.new_path else "rewrite"

    def diff(self) -> str:
        lines = difflib.unified_diff(
            self.old_text.splitlines(keepends=True),
            self.new_text.splitlines(keepends=True),
            fromfile="/dev/null" if self.old_path is None else f"a/{self.old_path}",
            tofile=f"b/{self.new_path}",
        )
        out = []
        for line in lines:
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
        if not out and self.action == "rename":  # a pure rename still shows in the diff
            out = [f"rename from {self.old_path}\n", f"rename to {self.new_path}\n"]
        return "".join(out)


@dataclass
class Plan:
    root: Path
    package_id: str
    changes: list[FileChange] = field(default_factory=list)
    notes: list[Issue] = field(default_factory=list)
    refusals: list[Issue] = field(default_factory=list)
    contracts: list[Issue] = field(default_factory=list)
    verdict: LoadResult | None = None  # the loader's verdict on the migrated package

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    @property
    def ok(self) -> bool:
        """Nothing refused, and the package (as migrated) passes the loader."""
        return not self.refusals and (self.verdict is None or self.verdict.ok)

    def diff(self) -> str:
        return "".join(change.diff() for change in self.changes)

    def as_dict(self) -> dict[str, Any]:
        verdict = self.verdict
        return {
            "path": str(self.root),
            "id": self.package_id,
            "ok": self.ok,
            "changed": self.changed,
            "changes": [
                {"action": c.action, "from": c.old_path, "to": c.new_path} for c in self.changes
            ],
            "diff": self.diff(),
            "notes": [i.as_dict() for i in self.notes],
            "refusals": [i.as_dict() for i in self.refusals],
            "contracts": [i.as_dict() for i in self.contracts],
            "errors": [i.as_dict() for i in verdict.errors] if verdict else [],
            "warnings": [i.as_dict() for i in verdict.warnings] if verdict else [],
        }


class _Refused(Exception):
    pass


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


# ------------------------------------------------------------------ one manifest file


@dataclass
class _Doc:
    """One manifest file being migrated."""

    old_path: str
    new_path: str
    raw: str
    head: str  # the text before the YAML ("---\n")
    yaml_text: str
    tail: str  # the closing "---" line and the body, byte for byte
    y: YAML
    data: CommentedMap
    changed: bool = False

    def text(self) -> str:
        if not self.changed:
            return self.raw
        return self.head + _dump(self.y, self.data) + self.tail


def _is_link(root: Path, relative: str) -> bool:
    """Whether the file or a folder between it and the package root is a symbolic link."""
    current = root
    for part in relative.split("/"):
        current = current / part
        if current.is_symlink():
            return True
    return False


def _read_doc(root: Path, old_path: str, new_path: str, plan: Plan) -> _Doc | None:
    full = root / old_path
    if _is_link(root, old_path):
        plan.refusals.append(
            Issue(
                old_path,
                "",
                REFUSED,
                f"{old_path} is (or lies under) a symbolic link; the migration never reads or "
                "writes through links [symlink]",
            )
        )
        return None
    try:
        raw_bytes = full.read_bytes()
    except OSError as exc:
        plan.refusals.append(
            Issue(old_path, "", REFUSED, f"{old_path} cannot be read: {exc.strerror or exc}")
        )
        return None
    parsed = split_markdown(raw_bytes, old_path)
    if parsed.issues:
        for issue in parsed.issues:
            plan.refusals.append(
                Issue(
                    issue.file,
                    issue.path,
                    REFUSED,
                    f"{issue.message} [{issue.code}]; the file is left as it is",
                )
            )
        return None
    raw = raw_bytes.decode("utf-8")
    match = re.match(
        r"\A(\ufeff?---[ \t]*\r?\n)(.*?)(^---[ \t]*(?:\r?\n|\Z).*)\Z", raw, re.S | re.M
    )
    if match is None:
        plan.refusals.append(
            Issue(old_path, "", REFUSED, "the YAML frontmatter could not be located")
        )
        return None
    head, yaml_text, tail = match.groups()
    if "\r\n" in yaml_text:
        plan.refusals.append(
            Issue(
                old_path,
                "",
                REFUSED,
                "the frontmatter has Windows line endings; save it with \\n line endings first",
            )
        )
        return None
    y = _yaml(yaml_text)
    try:
        data = y.load(yaml_text) if yaml_text.strip() else CommentedMap()
    except YAMLError as exc:
        plan.refusals.append(Issue(old_path, "", REFUSED, f"the YAML cannot be read: {exc}"))
        return None
    if not isinstance(data, CommentedMap):
        plan.refusals.append(
            Issue(old_path, "", REFUSED, "the frontmatter is not a mapping of fields")
        )
        return None
    return _Doc(old_path, new_path, raw, head, yaml_text, tail, y, data)


# ------------------------------------------------------------------ the rules


@dataclass
class _Ctx:
    plan: Plan
    doc: _Doc
    translations: dict[str, dict[str, CommentedMap]]  # locale -> manifest file -> texts

    def note(self, path: str, message: str) -> None:
        self.doc.changed = True
        self.plan.notes.append(Issue(self.doc.new_path, path, "migrated", message))

    def refuse(self, path: str, rule: str, message: str) -> None:
        self.plan.refusals.append(Issue(self.doc.old_path, path, REFUSED, f"{message} [{rule}]"))


def _migrate_root(ctx: _Ctx) -> None:
    data = ctx.doc.data
    if "type" in data:
        written = data["type"]
        kind = {"core": "core", "core-plugin": "core", "plugin": "plugin"}.get(str(written))
        if kind is None:
            ctx.refuse(
                "/type",
                "type-unknown",
                f"type {written!r} has no current kind (core or plugin)",
            )
        elif "kind" in data and data["kind"] != kind:
            ctx.refuse(
                "/type",
                "type-and-kind",
                f"type {written!r} and kind {data['kind']!r} disagree; keep one",
            )
        elif "kind" in data:
            _remove(data, "type")
            ctx.note("/type", "type removed: kind already says the same")
        else:
            _rename(data, "type", "kind", kind)
            ctx.note("/kind", f"type: {written} is now kind: {kind}")
    if "optional" in data:
        optional = data["optional"]
        if not isinstance(optional, list):
            ctx.refuse("/optional", "optional-not-list", "optional must be a list of contract IDs")
        else:
            _remove(data, "optional")
            ctx.note(
                "/optional",
                "optional removed: a contract a runtime reads and requires does not list is "
                "optional in the current format (" + ", ".join(map(str, optional)) + ")",
            )
    contributes = data.get("contributes")
    if isinstance(contributes, CommentedMap):
        data_decl = contributes.get("data")
        if isinstance(data_decl, CommentedMap):
            for namespace, decl in data_decl.items():
                if not isinstance(decl, CommentedMap):
                    continue
                authoring = decl.get("authoring")
                source = authoring.get("source") if isinstance(authoring, CommentedMap) else None
                if isinstance(source, CommentedMap) and "kind" in source:
                    _source_kind(ctx, source, f"/contributes/data/{namespace}/authoring/source")
    runtime = data.get("runtime")
    if isinstance(runtime, CommentedMap):
        _migrate_runtime(ctx, runtime, "/runtime")


def _source_kind(ctx: _Ctx, source: CommentedMap, where: str) -> None:
    kind = source["kind"]
    path = source.get("path")
    suffixes = _SOURCE_KINDS.get(str(kind))
    if suffixes is None:
        ctx.refuse(f"{where}/kind", "source-kind-unknown", f"source.kind {kind!r} is not known")
        return
    if not isinstance(path, str):
        ctx.refuse(f"{where}/kind", "source-kind-without-path", "source.kind needs a path")
        return
    stem = path.rstrip("/").rsplit("/", 1)[-1]
    suffix = os.path.splitext(stem)[1]
    if suffix not in suffixes:
        ctx.refuse(
            f"{where}/kind",
            "source-kind-disagrees",
            f"source.kind {kind!r} and the path {path!r} disagree: the current format reads a "
            "source by its path (.yaml/.yml, .json, or a directory for media); fix the path",
        )
        return
    _remove(source, "kind")
    ctx.note(f"{where}/kind", f"source.kind: {kind} removed: the path {path!r} says the same")


def _migrate_runtime(ctx: _Ctx, rt: CommentedMap, base: str) -> None:
    if "type" in rt:
        written = rt["type"]
        if written == "function":
            if "function" not in rt:
                ctx.refuse(
                    f"{base}/type",
                    "function-without-block",
                    "type: function needs a function block (function.handler)",
                )
            elif "agent" in rt:
                ctx.refuse(f"{base}/agent", "function-with-agent", "a function has no agent block")
            else:
                _remove(rt, "type")
                ctx.note(f"{base}/type", "type: function removed: the function block says it")
        elif written == "agent":
            if "function" in rt:
                ctx.refuse(
                    f"{base}/function", "agent-with-function", "an agent has no function block"
                )
            else:
                _remove(rt, "type")
                ctx.note(
                    f"{base}/type",
                    "type: agent removed: a runtime without a function block is an agent",
                )
        else:
            ctx.refuse(
                f"{base}/type", "type-unknown", f"runtime type {written!r} is not agent or function"
            )
    schedule = rt.get("schedule")
    if isinstance(schedule, CommentedMap):
        _migrate_schedule(ctx, schedule, f"{base}/schedule")
    io_ = rt.get("io")
    if isinstance(io_, CommentedMap) and io_.get("visibility") == "plugin":
        io_["visibility"] = "system"
        ctx.note(f"{base}/io/visibility", "io.visibility: plugin is now system")
    agent = rt.get("agent")
    if isinstance(agent, CommentedMap):
        _migrate_agent(ctx, agent, f"{base}/agent")


def _migrate_schedule(ctx: _Ctx, schedule: CommentedMap, where: str) -> None:
    trigger = schedule.get("trigger")
    trigger_type = "auto"
    if trigger == "scheduled":
        _remove(schedule, "trigger")
        ctx.note(f"{where}/trigger", "trigger: scheduled removed: auto is the default trigger")
    elif isinstance(trigger, CommentedMap):
        trigger_type = str(trigger.get("type", "auto"))
        if trigger_type in ("scheduled", "auto") and "type" in trigger:
            _remove(trigger, "type")
            ctx.note(
                f"{where}/trigger/type",
                f"trigger.type: {trigger_type} removed: auto is the default trigger",
            )
            trigger_type = "auto"
        if "interval" in trigger:
            interval = trigger["interval"]
            if trigger_type != "auto":
                ctx.refuse(
                    f"{where}/trigger/interval",
                    "interval-not-auto",
                    f"trigger.interval only counts for a scheduled trigger, not {trigger_type}",
                )
            elif "every" in schedule and schedule["every"] != interval:
                ctx.refuse(
                    f"{where}/trigger/interval",
                    "interval-and-every",
                    "trigger.interval and schedule.every disagree",
                )
            else:
                _remove(trigger, "interval")
                if interval != 1 and "every" not in schedule:
                    _insert_after(schedule, ("stage",), "every", interval)
                    ctx.note(f"{where}/every", f"trigger.interval: {interval} is now every")
                else:
                    ctx.note(
                        f"{where}/trigger/interval",
                        "trigger.interval: 1 removed: every turn is the default",
                    )
        if not trigger:
            _remove(schedule, "trigger")
    manual = schedule.get("manual")
    if isinstance(manual, CommentedMap):
        execution = manual.get("execution")
        extra = [k for k in manual if k != "execution"]
        if extra:
            ctx.refuse(f"{where}/manual/{extra[0]}", "no-current-equivalent", "unknown field")
            return
        if execution == "background" and trigger_type in ("manual", "event"):
            if schedule.get("background") is False:
                ctx.refuse(
                    f"{where}/manual",
                    "manual-and-background",
                    "manual.execution: background and background: false disagree",
                )
                return
            position = list(schedule).index("manual")
            _remove(schedule, "manual")
            if "background" not in schedule:
                schedule.insert(position, "background", True)
            ctx.note(f"{where}/background", "manual.execution: background is now background: true")
        elif execution in ("sync", "background"):
            _remove(schedule, "manual")
            why = (
                "the caller waits by default"
                if execution == "sync"
                else f"Covel ignored it for a {trigger_type} trigger"
            )
            ctx.note(f"{where}/manual", f"manual.execution: {execution} removed: {why}")
        else:
            ctx.refuse(
                f"{where}/manual/execution",
                "execution-unknown",
                f"manual.execution {execution!r} is not sync or background",
            )
    completion = schedule.get("completion")
    if isinstance(completion, CommentedMap):
        _turn_completion(ctx, schedule, completion, where)


def _turn_completion(ctx: _Ctx, schedule: CommentedMap, completion: CommentedMap, where: str):
    at = f"{where}/completion"
    known = {"mode", "settle", "maxSettleWaitMs", "maxQueueMs", "maxExecutionMs"}
    fixed = {"overlap": "serial", "stalePolicy": "reject"}  # the only values Covel allowed
    for key in completion:
        if key not in known and key not in fixed:
            ctx.refuse(f"{at}/{key}", "no-current-equivalent", f"completion.{key} is not known")
            return
        if key in fixed and completion[key] != fixed[key]:
            ctx.refuse(
                f"{at}/{key}",
                "no-current-equivalent",
                f"completion.{key}: {completion[key]!r} has no current equivalent",
            )
            return
    mode = completion.get("mode", "await")
    if "detached" in schedule:
        ctx.refuse(at, "completion-and-detached", "schedule.completion and detached are both set")
        return
    options = CommentedMap()
    if completion.get("settle") == "before-next-execution":
        options["settle"] = True
    elif "settle" in completion:
        ctx.refuse(f"{at}/settle", "settle-unknown", f"settle {completion['settle']!r}")
        return
    for key in ("maxSettleWaitMs", "maxQueueMs", "maxExecutionMs"):
        if key in completion:
            options[key] = completion[key]
    if mode == "detached":
        value: Any = options if options else True
        position = list(schedule).index("completion")
        token = _trailing(completion) or _pop_own_lines(schedule, "completion")
        schedule.ca.items.pop("completion", None)
        del schedule["completion"]
        schedule.insert(position, "detached", value)
        if token is not None:
            _attach(schedule, "detached", token)
        ctx.note(f"{where}/detached", "completion.mode: detached is now detached")
    elif mode == "await" and not options:
        _remove(schedule, "completion")
        ctx.note(at, "completion.mode: await removed: the turn waits by default")
    else:
        ctx.refuse(
            at, "completion-options-not-detached", "detached options need completion.mode: detached"
        )


def _migrate_agent(ctx: _Ctx, agent: CommentedMap, where: str) -> None:
    llm = agent.get("llm")
    if "llm" in agent:
        if not isinstance(llm, CommentedMap):
            ctx.refuse(f"{where}/llm", "llm-not-mapping", "agent.llm must be a mapping")
            return
        for key in llm:
            if key not in ("reasoningEffort", "toolChoice"):
                ctx.refuse(
                    f"{where}/llm/{key}",
                    "no-current-equivalent",
                    f"agent.llm.{key} has no place in the current format",
                )
                return
        effort = llm.get("reasoningEffort")
        if "reasoningEffort" in llm and effort != "disabled":
            ctx.refuse(
                f"{where}/llm/reasoningEffort",
                "no-current-equivalent",
                f"reasoningEffort {effort!r}: only disabled (reasoning: false) maps",
            )
            return
        if (
            "toolChoice" in llm
            and "toolChoice" in agent
            and agent["toolChoice"] != llm["toolChoice"]
        ):
            ctx.refuse(
                f"{where}/llm/toolChoice",
                "tool-choice-twice",
                "agent.llm.toolChoice and agent.toolChoice disagree",
            )
            return
        if "reasoningEffort" in llm and agent.get("reasoning") not in (None, False):
            ctx.refuse(
                f"{where}/llm/reasoningEffort",
                "reasoning-twice",
                "agent.llm.reasoningEffort: disabled and agent.reasoning: true disagree",
            )
            return
        token = _trailing(llm) or _pop_own_lines(agent, "llm")
        leading = _leading(agent, "llm")
        position = list(agent).index("llm")
        agent.ca.items.pop("llm", None)
        del agent["llm"]
        added = []
        if "toolChoice" in llm and "toolChoice" not in agent:
            agent.insert(position, "toolChoice", llm["toolChoice"])
            position += 1
            added.append("toolChoice")
        if "reasoningEffort" in llm and "reasoning" not in agent:
            agent.insert(position, "reasoning", False)
            added.append("reasoning")
        if leading is not None and added:
            _comment_before(agent, added[0], leading[0], max(leading[1] - 2, 0))
        if token is not None:
            keys = list(agent)
            last = added[-1] if added else (keys[position - 1] if position else None)
            if last is not None:
                _attach(agent, last, token)
        ctx.note(
            f"{where}/llm",
            "agent.llm is now "
            + (" and ".join(f"agent.{k}" for k in added) if added else "nothing (it was empty)"),
        )
    loop = agent.get("loop")
    if isinstance(loop, CommentedMap) and "completion" in loop:
        if "completion" in agent or "finishWith" in agent:
            ctx.refuse(
                f"{where}/loop/completion",
                "completion-twice",
                "agent.loop.completion and agent.completion/finishWith are both set",
            )
            return
        completion = loop["completion"]
        token = _trailing(loop) if list(loop)[-1] == "completion" else None
        loop.ca.items.pop("completion", None)
        del loop["completion"]
        position = list(agent).index("loop")
        agent.insert(position, "completion", completion)
        if not loop:
            agent.ca.items.pop("loop", None)
            del agent["loop"]
        if token is not None:
            keys = list(agent)
            _attach(agent, keys[min(position + 1, len(keys) - 1)], token)
        ctx.note(f"{where}/completion", "agent.loop.completion is now agent.completion")


# ------------------------------------------------------------------ locale maps


def _is_locale_map(value: Any) -> bool:
    return (
        isinstance(value, CommentedMap)
        and bool(value)
        and all(isinstance(k, str) and _LOCALE.match(k) for k in value)
        and all(isinstance(v, str) for v in value.values())
    )


def _fold_texts(ctx: _Ctx, node: Any, where: str, out: CommentedMap | None) -> bool:
    """Replace {en: ..., zh: ...} text by its English text; collect the other languages.

    out receives, per locale, the same path with list entries keyed by their identity field
    (what locales/<locale>.yaml expects). Returns whether anything was found below node.
    """
    found = False
    if isinstance(node, CommentedMap):
        for key in list(node):
            value = node[key]
            at = join(where, str(key))
            if key in _TEXT_KEYS and _is_locale_map(value):
                if "en" not in value:
                    ctx.refuse(
                        at,
                        "text-without-english",
                        "a locale map without en: the manifest's own text is English; add en",
                    )
                    continue
                node[key] = value["en"]
                for locale, text in value.items():
                    if locale == "en":
                        continue
                    section = ctx.translations.setdefault(locale, {}).setdefault(
                        ctx.doc.new_path, CommentedMap()
                    )
                    _put(section, _steps(ctx, at), text)
                ctx.note(at, "a locale map: English stays here, the rest goes to locales/")
                found = True
            elif isinstance(value, CommentedMap | CommentedSeq):
                found = _fold_texts(ctx, value, at, out) or found
    elif isinstance(node, CommentedSeq):
        for i, item in enumerate(node):
            found = _fold_texts(ctx, item, join(where, str(i)), out) or found
    return found


def _steps(ctx: _Ctx, pointer: str) -> list[Any]:
    """Path steps for a locale section: list indexes become {identity: value} matchers."""
    steps: list[Any] = []
    node: Any = ctx.doc.data
    for token in pointer.split("/")[1:]:
        if isinstance(node, CommentedSeq):
            item = node[int(token)]
            identity = next(
                (k for k in _IDENTITY_KEYS if isinstance(item, Mapping) and k in item), None
            )
            if identity is None:
                raise _Refused(f"{pointer}: the list entry has no identity field")
            steps.append((identity, item[identity]))
            node = item
        else:
            steps.append(token)
            node = node[token]
    return steps


def _put(section: CommentedMap, steps: list[Any], text: str) -> None:
    node: Any = section
    for i, step in enumerate(steps[:-1]):
        following = steps[i + 1]
        if isinstance(step, tuple):
            continue
        if isinstance(following, tuple):
            items = node.setdefault(step, CommentedSeq())
            identity, ident_value = following
            entry = next((e for e in items if e.get(identity) == ident_value), None)
            if entry is None:
                entry = CommentedMap()
                entry[identity] = ident_value
                items.append(entry)
            node = entry
        else:
            node = node.setdefault(step, CommentedMap())
    node[steps[-1]] = text


def _locale_changes(
    plan: Plan, translations: dict[str, dict[str, CommentedMap]], style: str
) -> None:
    """New or extended locales/<locale>.yaml files; style: YAML whose list indent they follow."""
    for locale in sorted(translations):
        relative = f"{LOCALES_DIR}/{locale}.yaml"
        full = plan.root / relative
        if _is_link(plan.root, relative):
            plan.refusals.append(
                Issue(relative, "", REFUSED, f"{relative} is a symbolic link [symlink]")
            )
            continue
        y = _yaml(style)
        if full.exists():
            old_text = full.read_text(encoding="utf-8")
            try:
                existing = y.load(old_text) or CommentedMap()
            except YAMLError as exc:
                plan.refusals.append(Issue(relative, "", REFUSED, f"cannot be read: {exc}"))
                continue
            if not isinstance(existing, CommentedMap):
                plan.refusals.append(Issue(relative, "", REFUSED, "a locale file is a mapping"))
                continue
        else:
            old_text, existing = "", CommentedMap()
        for file, texts in translations[locale].items():
            if file in existing:
                plan.refusals.append(
                    Issue(
                        relative,
                        join("", file),
                        REFUSED,
                        f"{relative} already translates {file}; merge the locale map by hand "
                        "[locale-section-exists]",
                    )
                )
                continue
            existing[file] = texts
        plan.changes.append(
            FileChange(relative if full.exists() else None, relative, old_text, _dump(y, existing))
        )


# ------------------------------------------------------------------ contracts


def _contract_needs(data: Mapping[str, Any], file: str, base: str = ""):
    """(file, pointer, contract) for every contract the manifest depends on."""
    for key in ("requires", "optional"):
        for i, value in enumerate(data.get(key) or [] if base == "" else []):
            if isinstance(value, str):
                yield file, f"/{key}/{i}", value
    schedule = data.get("schedule")
    if isinstance(schedule, Mapping):
        for key in ("needs", "after"):
            for i, value in enumerate(schedule.get(key) or []):
                if isinstance(value, Mapping) and isinstance(value.get("contract"), str):
                    yield file, f"{base}/schedule/{key}/{i}/contract", value["contract"]
    io_ = data.get("io")
    inputs = io_.get("inputs") if isinstance(io_, Mapping) else None
    if isinstance(inputs, Mapping):
        for name, binding in inputs.items():
            source = binding.get("from") if isinstance(binding, Mapping) else None
            if isinstance(source, Mapping) and isinstance(source.get("contract"), str):
                yield file, f"{base}/io/inputs/{name}/from/contract", source["contract"]


def _report_contracts(
    plan: Plan, docs: list[_Doc], provided: Mapping[str, set[str]] | None, own: set[str]
) -> None:
    if provided is None:
        return
    by_name: dict[str, list[str]] = {}
    for contract in provided:
        match = _CONTRACT.match(contract)
        if match:
            by_name.setdefault(match.group(1), []).append(contract)
    seen: set[tuple[str, str, str]] = set()
    for doc in docs:
        found = list(_contract_needs(doc.data, doc.new_path))
        runtime = doc.data.get("runtime")
        if isinstance(runtime, Mapping):
            found += list(_contract_needs(runtime, doc.new_path, "/runtime"))
        for file, pointer, contract in found:
            if contract in provided or contract in own or (file, pointer, contract) in seen:
                continue
            seen.add((file, pointer, contract))
            match = _CONTRACT.match(contract)
            others = sorted(by_name.get(match.group(1), [])) if match else []
            if others:
                listing = "; ".join(
                    f"{other} (from {', '.join(sorted(provided[other]))})" for other in others
                )
                message = (
                    f"{contract} is provided by no installed package; the hub has another major: "
                    f"{listing}. Left as written: a new major is a different contract"
                )
            else:
                message = f"{contract} is provided by no installed package. Left as written"
            plan.contracts.append(Issue(file, pointer, CONTRACT_MISSING, message))


# ------------------------------------------------------------------ the plan


def migrate_plan(
    path: str | os.PathLike[str],
    *,
    provided: Mapping[str, set[str]] | None = None,
    host_version: str = HOST_VERSION,
) -> Plan:
    """What plugin_migrate would do to the package at path. Reads only; never raises.

    provided maps each contract the hub's installed packages provide to their ids; the
    package's requirements outside it are reported (None: no report).
    """
    root = Path(os.path.abspath(path))
    plan = Plan(root=root, package_id=root.name)
    if not (root / PLUGIN_FILE).is_file():
        plan.refusals.append(
            Issue(PLUGIN_FILE, "", REFUSED, "the package has no PLUGIN.md at its root")
        )
        return plan
    try:
        _build(plan, provided, host_version)
    except _Refused as exc:
        plan.refusals.append(Issue(PLUGIN_FILE, "", REFUSED, str(exc)))
    if plan.refusals:
        plan.changes = []
    return plan


def _manifest_files(root: Path, plan: Plan) -> list[tuple[str, str]]:
    """(current path, path after migration) of every manifest file."""
    files = [(PLUGIN_FILE, PLUGIN_FILE)]
    runtimes = root / RUNTIMES_DIR
    if runtimes.is_dir():
        for child in sorted(runtimes.iterdir()):
            if not child.is_dir() or child.name.startswith("."):
                continue
            rel = f"{RUNTIMES_DIR}/{child.name}"
            old, new = child / PLUGIN_FILE, child / RUNTIME_FILE
            if old.is_file() and new.exists():
                plan.refusals.append(
                    Issue(
                        f"{rel}/{PLUGIN_FILE}",
                        "",
                        REFUSED,
                        f"{rel} has both PLUGIN.md and RUNTIME.md; keep one [runtime-file-twice]",
                    )
                )
            elif old.is_file():
                files.append((f"{rel}/{PLUGIN_FILE}", f"{rel}/{RUNTIME_FILE}"))
            elif new.is_file():
                files.append((f"{rel}/{RUNTIME_FILE}", f"{rel}/{RUNTIME_FILE}"))
            for entry in sorted(child.iterdir()):
                match = _VARIANT.match(entry.name)
                if match:
                    target = f"{rel}/RUNTIME.{match.group(1)}.md"
                    if (root / target).exists():
                        plan.refusals.append(
                            Issue(
                                f"{rel}/{entry.name}",
                                "",
                                REFUSED,
                                f"{target} exists too; keep one [runtime-file-twice]",
                            )
                        )
                    else:
                        files.append((f"{rel}/{entry.name}", target))
    return files


def _build(plan: Plan, provided: Mapping[str, set[str]] | None, host_version: str) -> None:
    root = plan.root
    files = _manifest_files(root, plan)
    translations: dict[str, dict[str, CommentedMap]] = {}
    docs: list[_Doc] = []
    for old_path, new_path in files:
        doc = _read_doc(root, old_path, new_path, plan)
        if doc is None:
            continue
        docs.append(doc)
        if old_path != new_path:
            plan.notes.append(Issue(new_path, "", "migrated", f"{old_path} is now {new_path}"))
        if re.search(r"\.[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})*\.md$", new_path):
            continue  # a locale variant carries only text
        ctx = _Ctx(plan, doc, translations)
        if new_path == PLUGIN_FILE:
            written = doc.data.get("id")
            if isinstance(written, str) and written:
                plan.package_id = written
            _migrate_root(ctx)
        else:
            _migrate_runtime(ctx, doc.data, "")
        try:
            _fold_texts(ctx, doc.data, "", None)
        except _Refused as exc:
            ctx.refuse("", "text-unmappable", str(exc))
    if plan.refusals:
        return
    for doc in docs:
        text = doc.text()
        if text != doc.raw or doc.old_path != doc.new_path:
            plan.changes.append(FileChange(doc.old_path, doc.new_path, doc.raw, text))
    _locale_changes(plan, translations, docs[0].yaml_text if docs else "")
    own = set()
    for doc in docs:
        for value in doc.data.get("provides") or []:
            own.add(value if isinstance(value, str) else str(value.get("contract", "")))
    _report_contracts(plan, docs, provided, own)
    if plan.refusals:
        return
    plan.verdict = _judge(plan, host_version)


def _judge(plan: Plan, host_version: str) -> LoadResult:
    """The loader's verdict on the package as migrated, from a scratch copy.

    A field the current format does not know becomes a refusal: the migration had no rule for
    it, so the author must decide.
    """
    with tempfile.TemporaryDirectory(prefix="covel-migrate-") as scratch:
        copy = Path(scratch) / plan.root.name
        shutil.copytree(
            plan.root, copy, symlinks=True, ignore=shutil.ignore_patterns(".git", "node_modules")
        )
        for change in plan.changes:
            if change.old_path and change.old_path != change.new_path:
                (copy / change.old_path).unlink()
            target = copy / change.new_path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(change.new_text, encoding="utf-8")
        verdict = load_package(copy, host_version=host_version)
    verdict = LoadResult(
        path=str(plan.root),
        package_id=verdict.package_id,
        manifest=verdict.manifest,
        errors=verdict.errors,
        warnings=verdict.warnings,
    )
    renamed = {c.new_path: c.old_path for c in plan.changes if c.old_path}
    for issue in verdict.errors:
        if issue.code == "unknown-field":
            plan.refusals.append(
                Issue(
                    renamed.get(issue.file, issue.file),
                    issue.path,
                    REFUSED,
                    f"{issue.message}: Covel's previous format has no such field either, or it "
                    "has no current equivalent; rewrite or remove it by hand [no-current-equivalent]",
                )
            )
    if plan.refusals:
        plan.changes = []
    return verdict


# ------------------------------------------------------------------ writing


def migrate_apply(plan: Plan, *, _replace: Callable[[str, str], None] = os.replace) -> None:
    """Write plan's changes all or nothing: new texts go to temporary files beside their
    targets first; only when every one is written are they moved into place, and a failure
    while moving puts every file back as it was."""
    if plan.refusals or not plan.changes:
        return
    root = plan.root
    temps: list[tuple[Path, Path]] = []  # (temporary file, target)
    created_dirs: list[Path] = []
    try:
        for change in plan.changes:
            target = root / change.new_path
            if not target.parent.exists():
                target.parent.mkdir(parents=True)
                created_dirs.append(target.parent)
            handle, temp = tempfile.mkstemp(
                prefix=f".{target.name}.", suffix=".migrate", dir=target.parent
            )
            with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
                out.write(change.new_text)
                out.flush()
                os.fsync(out.fileno())
            if target.exists():
                shutil.copymode(target, temp)
            elif change.old_path and (root / change.old_path).exists():
                shutil.copymode(root / change.old_path, temp)
            temps.append((Path(temp), target))
    except BaseException:
        for temp, _ in temps:
            temp.unlink(missing_ok=True)
        for folder in reversed(created_dirs):
            shutil.rmtree(folder, ignore_errors=True)
        raise
    # Keep the old texts to put back if a move fails half way.
    backups = {
        change.old_path: change.old_text for change in plan.changes if change.old_path is not None
    }
    done: list[Path] = []
    removed: list[str] = []
    try:
        for temp, target in temps:
            _replace(str(temp), str(target))
            done.append(target)
        for change in plan.changes:
            if change.old_path and change.old_path != change.new_path:
                (root / change.old_path).unlink()
                removed.append(change.old_path)
    except BaseException:
        for target in done:
            target.unlink(missing_ok=True)
        for temp, _ in temps:
            temp.unlink(missing_ok=True)
        for old_path, text in backups.items():
            (root / old_path).write_text(text, encoding="utf-8")
        for folder in reversed(created_dirs):
            shutil.rmtree(folder, ignore_errors=True)
        raise
