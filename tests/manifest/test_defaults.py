"""Every default the spec states is in the normalised manifest.

One row per default of the spec's field tables ("Defaults to X", "Default: X"): the table and
field, the spec's wording, and the value the normalised manifest of a minimal package that
omits the field holds (ABSENT where absence means "none" and nothing is filled in). Where a
row names a `written` value, writing it keeps it: a default never replaces what the author
wrote. Runtime rows use runtimes/r/RUNTIME.md and read RuntimeManifest.data; the inline
runtime goes through the same code (see the last tests).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from catalogue.manifest import LoadResult, load_package
from catalogue.manifest.loader import package_hash
from catalogue.manifest.types import thaw

from .conftest import PackageFactory, put

SPEC_FIELDS = Path(__file__).resolve().parent.parent / "schema" / "spec_fields.json"
ABSENT = object()
RT = "runtimes/r/RUNTIME.md"
ALL_OPS = ["set", "merge", "inc", "append", "insert", "remove", "upsertItem", "delete"]
FILES = {"s.json": "{}", "server/index.js": "export default () => {}\n"}


def plugin(**contributes: Any) -> dict[str, Any]:
    """A minimal valid PLUGIN.md with one tool, one action and one data namespace."""
    return {
        "description": "Defaults.",
        "contributes": {
            "tools": ["t"],
            "actions": ["a"],
            "data": {"facts": {"schema": "./s.json"}},
            **contributes,
        },
    }


def agent(**extra: Any) -> dict[str, Any]:
    """A minimal valid agent runtime; extra replaces top-level keys."""
    return {"schedule": {"stage": "post-turn"}, "agent": {}, **extra}


def story(**agent_fields: Any) -> dict[str, Any]:
    return agent(
        schedule={"stage": "narrative"}, io={"visibility": "story"}, agent=dict(agent_fields)
    )


@dataclass(frozen=True)
class Row:
    heading: str  # the spec table, as headed in the spec
    field: str
    default: str  # the spec's wording
    pointer: str  # into Manifest.data, or RuntimeManifest.data when runtime is set
    expected: Any  # ABSENT: the field stays absent
    frontmatter: dict[str, Any] = field(default_factory=plugin)
    runtime: dict[str, Any] | None = None
    written: Any = ABSENT  # a value the author may write instead; it is kept
    kept: Any = ABSENT  # what the written value normalises to, when not itself
    files: dict[str, str] = field(default_factory=dict)
    case: str = ""  # tells apart rows of one field

    @property
    def id(self) -> str:
        base = f"{self.heading}.{self.field}" if self.heading != "Top-level fields" else self.field
        return base + (f" ({self.case})" if self.case else "")


LOOP = "/agent/loop"
# One row per default reads best as a table, so the formatter leaves it as written.
# fmt: off
ROWS = [
    # --- PLUGIN.md: top level ----------------------------------------------------------------
    Row("Top-level fields", "id", "Defaults to the name of the package directory", "/id", "notes"),
    Row("Top-level fields", "kind", 'Defaults to plugin. Default: "plugin"', "/kind", "plugin",
        written="core"),
    Row("Top-level fields", "version", "A package without a version counts as 0.0.0",
        "/version", "0.0.0", written="1.2.0"),
    Row("Top-level fields", "entry", "Defaults to ./server/index.js when that file exists",
        "/entry", "./server/index.js", written="./server/main.js",
        files={"server/main.js": "x"}),
    Row("Top-level fields", "provides",
        "The contract of each runtime's io.output.contract is added by the loader",
        "/provides", [{"contract": "notes.out@1", "default": False}],
        runtime=None,
        frontmatter={**plugin(), "runtime": agent(io={"output": {"contract": "notes.out@1"}})}),
    Row("provides[]", "default", "true marks the default provider (absent: not the default)",
        "/provides/0/default", False,
        frontmatter={**plugin(), "provides": [{"contract": "x.y@1"}]}, written=True),
    # --- PLUGIN.md: contributes ----------------------------------------------------------------
    Row("contributes.commands[].arguments[]", "type", "Defaults to string",
        "/contributes/commands/0/arguments/0/type", "string",
        frontmatter=plugin(commands=[
            {"name": "c", "description": "d", "action": "a", "arguments": [{"name": "x"}]}
        ]), written="integer"),
    Row("contributes.actionKinds[]", "roles", "Defaults to [player]",
        "/contributes/actionKinds/0/roles", ["player"],
        frontmatter=plugin(actionKinds=[{"name": "poke", "display": {"label": "Poke"}}]),
        written=["host"]),
    Row("contributes.actionKinds[]", "text", "optional (default)",
        "/contributes/actionKinds/0/text", "optional",
        frontmatter=plugin(actionKinds=[{"name": "poke", "display": {"label": "Poke"}}]),
        written="none"),
    Row("contributes.actionKinds[]", "actor", "Defaults to true",
        "/contributes/actionKinds/0/actor", True,
        frontmatter=plugin(actionKinds=[{"name": "poke", "display": {"label": "Poke"}}]),
        written=False),
    Row("contributes.services[]", "access", "read (the default)",
        "/contributes/services/0/access", "read",
        frontmatter=plugin(services=[{"contract": "notes.svc@1"}]), written="write"),
    Row("contributes.services[]", "access", "a plain contract ID is the short form",
        "/contributes/services/0", "notes.svc@1",
        frontmatter=plugin(services=["notes.svc@1"]), case="string form kept"),
    Row("contributes.extensions[]", "order", "Defaults to 0",
        "/contributes/extensions/0/order", 0,
        frontmatter=plugin(extensions=[{"point": "prompt.segment@1", "id": "e"}]), written=5),
    Row("contributes.hooks[]", "enforce", "Defaults to normal",
        "/contributes/hooks/0/enforce", "normal",
        frontmatter=plugin(hooks=[{"event": "TurnStart"}]), written="pre"),
    Row("contributes.hooks[]", "enforce", "an event name is the short form for normal",
        "/contributes/hooks/0", "TurnStart",
        frontmatter=plugin(hooks=["TurnStart"]), case="string form kept"),
    Row("contributes.events[]", "advertise", "Defaults to true. Default: true",
        "/contributes/events/0/advertise", True,
        frontmatter=plugin(events=[{"topic": "x.y", "schema": "./s.json", "description": "d"}]),
        written=False),
    Row("contributes.datasets.*", "ops", "Defaults to every kind",
        "/contributes/datasets/ds/ops", ALL_OPS,
        frontmatter=plugin(datasets={"ds": {"schema": "./s.json"}}), written=["set"]),
    Row("contributes.datasets.*", "tools",
        "Defaults to get and list, upsert when ops allow set, and update when ops allow any "
        "other operation",
        "/contributes/datasets/ds/tools", ["get", "list", "upsert", "update"],
        frontmatter=plugin(datasets={"ds": {"schema": "./s.json"}}), written=["get"]),
    Row("contributes.datasets.*", "tools", "upsert when ops allow set",
        "/contributes/datasets/ds/tools", ["get", "list", "upsert"],
        frontmatter=plugin(datasets={"ds": {"schema": "./s.json", "ops": ["set"]}}),
        case="ops [set]"),
    Row("contributes.datasets.*", "tools", "update when ops allow any other operation",
        "/contributes/datasets/ds/tools", ["get", "list", "update"],
        frontmatter=plugin(datasets={"ds": {"schema": "./s.json", "ops": ["merge", "delete"]}}),
        case="ops without set"),
    Row("contributes.datasets.*", "key", "Omit when callers choose keys: stays absent",
        "/contributes/datasets/ds/key", ABSENT,
        frontmatter=plugin(datasets={"ds": {"schema": "./s.json"}})),
    Row("contributes.data.*", "version", "Defaults to 1. Default: 1",
        "/contributes/data/facts/version", 1, written=2),
    Row("contributes.data.*.authoring.source", "key", "Defaults to id",
        "/contributes/data/facts/authoring/source/key", "id",
        frontmatter=plugin(data={"facts": {"schema": "./s.json", "authoring": {
            "title": "Facts", "source": {"path": "data/facts.yaml"}}}}), written="slug"),
    Row("contributes.data.*.authoring.source", "key", "and to filename for a media directory",
        "/contributes/data/facts/authoring/source/key", "filename",
        frontmatter=plugin(data={"facts": {"schema": "./s.json", "authoring": {
            "title": "Facts", "source": {"path": "media/facts"}}}}), case="media directory"),
    Row("contributes.data.*.authoring.source", "visibility", "Defaults to public",
        "/contributes/data/facts/authoring/source/visibility", "public",
        frontmatter=plugin(data={"facts": {"schema": "./s.json", "authoring": {
            "title": "Facts", "source": {"path": "data/facts.yaml"}}}}), written="hidden"),
    Row("contributes.prompt[]", "role", "Defaults to system",
        "/contributes/prompt/0/role", "system",
        frontmatter=plugin(prompt=[{"id": "p", "content": "c", "position": "system"}]),
        written="user"),
    Row("contributes.settings[]", "default", "no default: absent means none",
        "/contributes/settings/0/default", ABSENT,
        frontmatter=plugin(settings=[{"key": "k", "type": "text", "label": "K"}])),
    # --- runtime.schedule ----------------------------------------------------------------------
    Row("runtime.schedule.trigger", "type", "Defaults to auto", "/schedule/trigger/type",
        "auto", runtime=agent(), written="manual"),
    Row("runtime.schedule.trigger", "type", "subagentOnly implies trigger: manual",
        "/schedule/trigger/type", "manual",
        runtime=agent(schedule={"subagentOnly": True}), case="subagentOnly"),
    Row("runtime.schedule", "every", "Defaults to 1, every turn", "/schedule/every", 1,
        runtime=agent(), written=3),
    Row("runtime.schedule", "every", "auto only: a manual runtime gets none", "/schedule/every",
        ABSENT, runtime=agent(schedule={"trigger": {"type": "manual"}}), case="manual"),
    Row("runtime.schedule", "detached", "Defaults to false: the turn waits",
        "/schedule/detached", False, runtime=agent(), written=True, kept={"settle": False}),
    Row("runtime.schedule.detached", "settle", "Defaults to false",
        "/schedule/detached/settle", False,
        runtime=agent(schedule={"stage": "post-turn", "detached": {}}), written=True),
    Row("runtime.schedule.detached", "maxSettleWaitMs", "no default without settle: absent",
        "/schedule/detached/maxSettleWaitMs", ABSENT,
        runtime=agent(schedule={"stage": "post-turn", "detached": {}})),
    Row("runtime.schedule", "background", "Defaults to false", "/schedule/background", False,
        runtime=agent(schedule={"stage": "post-turn", "trigger": {"type": "manual"}}),
        written=True),
    Row("runtime.schedule", "subagentOnly", "Defaults to false", "/schedule/subagentOnly",
        False, runtime=agent(schedule={"trigger": {"type": "manual"}}), written=True),
    Row("runtime.schedule.needs[] (form 2 of 2)", "cardinality", "Defaults to one",
        "/schedule/needs/0/cardinality", "one",
        runtime=agent(schedule={"stage": "post-turn", "needs": [{"contract": "n.c@1"}]}),
        written="all"),
    Row("runtime.schedule.after[] (form 2 of 2)", "cardinality", "Defaults to one",
        "/schedule/after/0/cardinality", "one",
        runtime=agent(schedule={"stage": "post-turn", "after": [{"contract": "a.c@1"}]}),
        written="all"),
    # --- runtime.io --------------------------------------------------------------------------
    Row("runtime.io", "visibility", "Defaults to system", "/io/visibility", "system",
        runtime=agent(schedule={"stage": "narrative"}), written="story"),
    Row("runtime.io.inputs.*", "scope", "Defaults to turn", "/io/inputs/i/scope", "turn",
        runtime=agent(io={"inputs": {"i": {"from": {"contract": "i.c@1"}, "recordAs": "x"}}}),
        written="committed"),
    Row("runtime.io.inputs.*", "required", "Defaults to true", "/io/inputs/i/required", True,
        runtime=agent(io={"inputs": {"i": {"from": {"contract": "i.c@1"}}}}), written=False),
    Row("runtime.io.inputs.*", "required", "a kernel input takes no other field",
        "/io/inputs/i/required", ABSENT,
        runtime=agent(io={"inputs": {"i": {"from": {"kernel": "turn-digest@1"}}}}),
        case="kernel input"),
    Row("runtime.io.inputs.*.from (form 2 of 3)", "cardinality", "Defaults to one",
        "/io/inputs/i/from/cardinality", "one",
        runtime=agent(io={"inputs": {"i": {"from": {"contract": "i.c@1"}}}}), written="all"),
    Row("runtime.io.selfData[]", "format", 'Defaults to summary. Default: "summary"',
        "/io/selfData/0/format", "summary",
        runtime=agent(io={"selfData": [{"namespace": "facts", "as": "<facts>"}]}),
        written="full"),
    Row("runtime.io.selfData[]", "maxEntries", "Defaults to 50. Default: 50",
        "/io/selfData/0/maxEntries", 50,
        runtime=agent(io={"selfData": [{"namespace": "facts", "as": "<facts>"}]}), written=7),
    # --- runtime.agent -----------------------------------------------------------------------
    Row("runtime.agent", "model", "Defaults to story with io.visibility: story, otherwise plugin",
        "/agent/model", "plugin", runtime=agent(), written="utility"),
    Row("runtime.agent", "model", "Defaults to story with io.visibility: story",
        "/agent/model", "story", runtime=story(), case="story"),
    Row("runtime.agent", "reasoning", "Defaults to true", "/agent/reasoning", True,
        runtime=agent(), written=False),
    Row("runtime.agent", "toolChoice",
        "finishWith: the model must call a tool on every step (toolChoice: required) unless "
        "toolChoice says otherwise",
        "/agent/toolChoice", "required", runtime=agent(agent={"finishWith": "t"}),
        written={"name": "t"}, case="finishWith"),
    Row("runtime.agent", "toolChoice", "Without it, the model chooses: stays absent",
        "/agent/toolChoice", ABSENT, runtime=agent()),
    Row("runtime.agent", "history", "When omitted, the runtime sees the shared session history",
        "/agent/history", ABSENT, runtime=agent()),
    Row("runtime.agent.history", "includeSummaries", "Defaults to false",
        "/agent/history/includeSummaries", False,
        runtime=agent(agent={"history": {"maxTurns": 2}}), written=True),
    Row("runtime.agent.tools.services[]", "as",
        "Defaults to the contract without its version, dots as dashes",
        "/agent/tools/services/0/as", "inventory-items",
        runtime=agent(agent={"tools": {"services": [{"contract": "inventory.items@1"}]}}),
        written="bag"),
    # --- runtime.agent.loop ------------------------------------------------------------------
    Row("runtime.agent.loop", "timeoutMs", "Defaults to 120000", f"{LOOP}/timeoutMs", 120_000,
        runtime=agent(), written=5000),
    Row("runtime.agent.loop", "timeoutMs", "240000 with io.visibility: story",
        f"{LOOP}/timeoutMs", 240_000, runtime=story(), case="story"),
    Row("runtime.agent.loop", "callTimeoutMs", "Defaults to 60000", f"{LOOP}/callTimeoutMs",
        60_000, runtime=agent(), written=1000),
    Row("runtime.agent.loop", "callTimeoutMs", "120000 with io.visibility: story",
        f"{LOOP}/callTimeoutMs", 120_000, runtime=story(), case="story"),
    Row("runtime.agent.loop", "idleTimeoutMs", "Defaults to 120000", f"{LOOP}/idleTimeoutMs",
        120_000, runtime=agent(), written=1000),
    Row("runtime.agent.loop", "maxRetries", "Defaults to 3", f"{LOOP}/maxRetries", 3,
        runtime=agent(), written=0),
    Row("runtime.agent.loop", "maxRetries", "1 with io.visibility: story", f"{LOOP}/maxRetries",
        1, runtime=story(), case="story"),
    Row("runtime.agent.loop", "loopDetection", "Defaults to 3", f"{LOOP}/loopDetection", 3,
        runtime=agent(), written=0),
    Row("runtime.agent.loop", "maxRecursionDepth", "Defaults to 10",
        f"{LOOP}/maxRecursionDepth", 10, runtime=agent(), written=2),
    Row("runtime.agent.loop", "profile", "Defaults to system", f"{LOOP}/profile", "system",
        runtime=agent(), written="actor"),
    Row("runtime.agent.loop", "profile", "Defaults to story with io.visibility: story",
        f"{LOOP}/profile", "story", runtime=story(), case="story"),
    Row("runtime.agent.loop", "stream", "Defaults to the profile's value", f"{LOOP}/stream",
        False, runtime=agent()),
    Row("runtime.agent.loop", "stream", "true for story", f"{LOOP}/stream", True,
        runtime=story(), written=False, case="story"),
    Row("runtime.agent.loop", "steering", "Defaults to the profile's value",
        f"{LOOP}/steering", False, runtime=agent()),
    Row("runtime.agent.loop", "steering", "true for story", f"{LOOP}/steering", True,
        runtime=story(), written=False, case="story"),
    Row("runtime.agent.loop", "truncation", "otherwise reject", f"{LOOP}/truncation", "reject",
        runtime=agent()),
    Row("runtime.agent.loop", "truncation", "Defaults to accept for story",
        f"{LOOP}/truncation", "accept", runtime=story(), written="reject", case="story"),
    Row("runtime.agent.loop", "fallback", "Defaults to fail for system", f"{LOOP}/fallback",
        "fail", runtime=agent(), written="answer-without-tools"),
    Row("runtime.agent.loop", "fallback", "otherwise answer-without-tools",
        f"{LOOP}/fallback", "answer-without-tools",
        runtime=agent(agent={"loop": {"profile": "actor"}}), case="actor"),
    Row("runtime.agent.loop", "maxSteps", "no default stated: stays absent",
        f"{LOOP}/maxSteps", ABSENT, runtime=agent()),
    Row("runtime.agent.loop", "firstTokenTimeoutMs",
        "Without it an attempt waits at most 120000 (a bound, not a value): stays absent",
        f"{LOOP}/firstTokenTimeoutMs", ABSENT, runtime=agent()),
    Row("runtime.agent.loop.corrections", "toolUse", "Defaults to 1",
        f"{LOOP}/corrections/toolUse", 1, runtime=agent(), written=0),
    Row("runtime.agent.loop.corrections", "review", "Defaults to 2",
        f"{LOOP}/corrections/review", 2, runtime=agent(), written=0),
    Row("runtime.agent.loop.corrections", "loopPerturbation", "Defaults to 1",
        f"{LOOP}/corrections/loopPerturbation", 1, runtime=agent(), written=0),
    Row("runtime.agent.loop.corrections", "outputRepair", "Defaults to 1",
        f"{LOOP}/corrections/outputRepair", 1, runtime=agent(), written=0),
    Row("runtime.agent.loop.finalizer", "maxSteps", "Defaults to true",
        f"{LOOP}/finalizer/maxSteps", True, runtime=agent(), written=False),
    Row("runtime.agent.loop.finalizer", "deadlineReserveMs", "Defaults to 0, off",
        f"{LOOP}/finalizer/deadlineReserveMs", 0, runtime=agent(), written=1000),
    # --- runtime.function --------------------------------------------------------------------
    Row("runtime.function", "handler",
        "Defaults to ./handler.js next to the manifest when that file exists",
        "/function/handler", "./runtimes/r/handler.js",
        runtime={"schedule": {"stage": "post-turn"}, "function": {}},
        files={"runtimes/r/handler.js": "x"}),
    Row("runtime.function", "timeoutMs", "no default stated: stays absent",
        "/function/timeoutMs", ABSENT,
        runtime={"schedule": {"stage": "post-turn"}, "function": {}},
        files={"runtimes/r/handler.js": "x"}),
]
# fmt: on

# Spec rows whose description says "default" without stating a default of that field.
NOT_A_DEFAULT = {
    ("contributes.data.*.authoring", "generate"): "default is one of its values",
    ("runtime", "function"): "function: {} takes the defaults of the fields inside it",
    ("runtime.schedule", "stage"): "'the default' there is the auto trigger; a stage has none",
}


def get(data: Any, pointer: str) -> Any:
    node = data
    for part in pointer.lstrip("/").split("/"):
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                return ABSENT
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return ABSENT
    return node


def load_row(make_package: PackageFactory, row: Row, value: Any = ABSENT) -> Any:
    """The normalised value at row.pointer; value, when given, is written there first."""
    frontmatter = copy.deepcopy(row.frontmatter)
    runtime = copy.deepcopy(row.runtime)
    if value is not ABSENT:
        put(runtime if runtime is not None else frontmatter, row.pointer, value)
    result = load_package(
        make_package(
            frontmatter,
            base_files=False,
            files={**FILES, **row.files},
            runtimes={"r": runtime} if runtime is not None else None,
        )
    )
    assert result.ok, [str(i) for i in result.errors]
    assert result.manifest is not None
    if runtime is not None:
        return get(thaw(result.manifest.runtimes[0].data), row.pointer)
    return get(thaw(result.manifest.data), row.pointer)


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.id)
def test_an_omitted_field_gets_the_spec_default(make_package: PackageFactory, row: Row) -> None:
    assert load_row(make_package, row) == row.expected, f"{row.id}: {row.default}"


WRITTEN = [row for row in ROWS if row.written is not ABSENT]


@pytest.mark.parametrize("row", WRITTEN, ids=lambda row: row.id)
def test_a_written_value_is_kept(make_package: PackageFactory, row: Row) -> None:
    kept = row.written if row.kept is ABSENT else row.kept
    assert row.written != row.expected  # a written default would prove nothing
    assert load_row(make_package, row, row.written) == kept


def test_every_default_of_the_spec_has_a_row() -> None:
    """Each spec row whose description speaks of a default (tests/schema/spec_fields.json keeps
    the spec's tables) has a row above, or is named in NOT_A_DEFAULT."""
    sections = json.loads(SPEC_FIELDS.read_text(encoding="utf-8"))
    said = {
        (section["heading"], spec_row["field"])
        for section in sections
        for spec_row in section["rows"]
        if spec_row["says_default"]
    }
    covered = {(row.heading, row.field) for row in ROWS}
    assert said - covered - NOT_A_DEFAULT.keys() == set()
    assert NOT_A_DEFAULT.keys() <= said


def _both_forms(make_package: PackageFactory, runtime: dict[str, Any]) -> tuple[Any, Any]:
    inline = load_package(
        make_package({**plugin(), "runtime": runtime}, name="inline", files=FILES, base_files=False)
    )
    folder = load_package(
        make_package(
            plugin(), name="folder", files=FILES, base_files=False, runtimes={"r": runtime}
        )
    )
    assert inline.manifest is not None and folder.manifest is not None
    return inline.manifest, folder.manifest


def test_the_inline_runtime_gets_the_same_defaults(make_package: PackageFactory) -> None:
    inline, folder = _both_forms(make_package, agent(agent={"finishWith": "t"}))
    assert thaw(inline.runtimes[0].data) == thaw(folder.runtimes[0].data)
    # Manifest.data carries the normalised inline runtime too.
    assert thaw(inline.data["runtime"]) == thaw(inline.runtimes[0].data)
    assert inline.data["runtime"]["agent"]["loop"]["maxRetries"] == 3


def test_raw_and_the_content_hash_stay_as_written(make_package: PackageFactory) -> None:
    """Defaults go into the normalised manifest only: the raw frontmatter (what an invalid
    package's card is built from) and the content hash (over the files) do not see them."""
    frontmatter = plugin(
        hooks=[{"event": "TurnStart"}], prompt=[{"id": "p", "content": "c", "position": "system"}]
    )
    frontmatter["runtime"] = agent()
    root = make_package(frontmatter, files=FILES, base_files=False)
    result = load_package(root)
    assert result.ok and result.manifest is not None
    assert thaw(result.raw) == frontmatter
    assert result.manifest.data["contributes"]["hooks"][0]["enforce"] == "normal"
    assert result.content_hash == package_hash(root)

    frontmatter["kind"] = "neither"  # invalid: no manifest, raw as written
    bad: LoadResult = load_package(make_package(frontmatter, name="bad", files=FILES))
    assert bad.manifest is None and thaw(bad.raw) == frontmatter
    assert "role" not in bad.raw["contributes"]["prompt"][0]


def test_the_catalogue_does_not_show_a_filled_in_loop_default_as_declared(
    make_package: PackageFactory,
) -> None:
    """The runtime card shows only loop values a package declares (docs/catalogue.md); the
    loader now fills in every loop default, so values equal to the default stay unshown."""
    from catalogue.selectors import runtime_details

    def loop_lines(runtime: dict[str, Any], name: str) -> list[str]:
        root = make_package(
            plugin(), name=name, files=FILES, base_files=False, runtimes={"r": runtime}
        )
        manifest = load_package(root).manifest
        assert manifest is not None
        lines = runtime_details(thaw(manifest.runtimes[0].data), kind="agent")
        return [line for line in lines if "retries" in line or "stops after" in line]

    assert loop_lines(agent(), "plain") == []
    assert loop_lines(story(), "story") == []
    declared = agent(agent={"loop": {"maxRetries": 0, "timeoutMs": 5000}})
    assert loop_lines(declared, "declared") == [
        "never retries a failed model call",
        "stops after 5 s",
    ]
