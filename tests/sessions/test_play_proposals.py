"""Every refusal of the proposal checks (sessions/proposals.py), and how a real turn shows it.

The pure checks run without Node or a database; the turn tests run a package in real Node
and read the runtime's status, code and reason, and what was (not) written.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client
from test_play_support import (
    by_runtime,
    index_bundled,
    index_folder,
    make_world,
    play,
    write_plugin,
)

from agents.models import ModelSlot
from agents.standin import StandInModel
from agents.tools import notification_normalise
from eventlog.models import SessionEvent
from sessions import selectors
from sessions.models import PluginData, Turn
from sessions.proposals import (
    ProposalBatch,
    ProposalRefused,
    character_record,
    effects_proposals,
    proposal_batch,
)
from sessions.services import session_create, session_rpc


def batch(*proposals, package="ledger") -> ProposalBatch:
    return proposal_batch(list(proposals), package=package, runtime="ledger/keep")


def refused(*proposals, package="ledger") -> ProposalRefused:
    with pytest.raises(ProposalRefused) as caught:
        batch(*proposals, package=package)
    return caught.value


# ------------------------------------------------------------------ the checks


def test_the_known_types_sort_into_writes_lore_and_events():
    sorted_ = batch(
        {"type": "plugin.data", "payload": {"namespace": "n", "key": "a", "value": 1}},
        {
            "type": "plugin.data.batch",
            "payload": {
                "items": [
                    {"namespace": "n", "key": "b", "value": 2},
                    {"namespace": "_hidden.notes", "key": "c", "value": 3},
                ]
            },
        },
        {"type": "plugin.data.delete", "payload": {"namespace": "n", "key": "z"}},
        {"type": "event.emit", "payload": {"topic": "ledger.kept", "data": {"n": 1}}},
        {
            "type": "lorebook.upsert",
            "payload": {"entries": [{"id": "gate", "content": "Shut.", "strategy": "constant"}]},
        },
    )
    assert sorted_.writes == [
        ("n", "a", [{"op": "set", "value": 1}]),
        ("n", "b", [{"op": "set", "value": 2}]),
        ("_hidden.notes", "c", [{"op": "set", "value": 3}]),  # the package's own hidden data
        ("n", "z", [{"op": "delete"}]),
    ]
    assert sorted_.events == [("ledger.kept", {"n": 1})]
    assert sorted_.lore == [
        {
            "id": "gate",
            "pluginId": "ledger",
            "keys": [],
            "content": "Shut.",
            "strategy": "constant",
            "position": "after_char_defs",
            "insertionOrder": 100,
            "enabled": True,
        }
    ]


def test_an_unknown_type_is_refused_naming_the_type_and_the_runtime():
    problem = refused({"type": "plugin.data.frobnicate", "payload": {}})
    assert problem.code == "unknown-proposal-type"
    assert problem.message == (
        "ledger/keep: proposal 0: unknown proposal type 'plugin.data.frobnicate' "
        "[unknown-proposal-type]"
    )
    assert refused({"payload": {}}).code == "unknown-proposal-type"  # no type at all
    # Only the hub marks what came from effects.pluginData; a plugin's own key does not.
    forged = refused({"type": "nope", "via": "effects.pluginData", "payload": {}})
    assert forged.message.startswith("ledger/keep: proposal 0: ")


def test_asset_generate_is_refused_saying_why():
    problem = refused(
        {
            "type": "asset.generate",
            "payload": {"ref": {"id": "a1", "mime": "image/png", "size": 3}, "modality": "image"},
        }
    )
    assert problem.code == "asset-store-unavailable"
    assert "does not commit asset.generate proposals: the hub has no media store" in (
        problem.message
    )


@pytest.mark.parametrize(
    ("kind", "code"),
    [
        ("character.schema.set", "character-schema-unsupported"),
        ("dimension.initialize", "dimensions-unsupported"),
        ("dimension.update", "dimensions-unsupported"),
    ],
)
def test_newer_covel_types_without_a_model_here_are_refused_by_name(kind, code):
    problem = refused({"type": kind, "payload": {}})
    assert problem.code == code
    assert f"the hub does not commit {kind} proposals: " in problem.message


def test_covels_other_types_sort_into_story_forms_blocks_and_records():
    form = {"title": "Name?", "fields": [{"name": "who", "label": "Who"}]}
    sorted_ = batch(
        {"type": "narrative.append", "payload": {"content": "Rain.", "kind": "plugin"}},
        {"type": "narrative.append", "payload": {"content": "A bell."}},
        {"type": "interaction.request", "payload": {"interactionId": "q1", "data": form}},
        {"type": "ui.render", "id": "p-7", "payload": {"parts": [{"id": "a", "type": "text"}]}},
        {"type": "state.patch", "payload": {"table": "ship", "field": "hull", "value": 3}},
        {"type": "working_memory.set", "payload": {"scope": "story", "key": "k", "value": None}},
        {"type": "character.upsert", "payload": {"id": "ana", "name": "Ana"}},
    )
    assert sorted_.narrative == [
        {"content": "Rain.", "kind": "plugin"},
        {"content": "A bell.", "kind": "plugin"},
    ]
    assert sorted_.forms == [
        ("ledger/keep: proposal 2/payload", {**form, "interactionId": "q1", "type": "form"})
    ]
    assert sorted_.blocks == [{"id": "p-7", "data": {"parts": [{"id": "a", "type": "text"}]}}]
    assert sorted_.state == [{"table": "ship", "field": "hull", "value": 3}]
    assert sorted_.memory == [{"scope": "story", "key": "k", "value": None}]
    assert sorted_.characters == [("ledger/keep: proposal 6/payload", {"id": "ana", "name": "Ana"})]
    assert sorted_.writes == [] and sorted_.lore == []


def test_a_versioned_character_upsert_patches_the_live_record():
    live = {"id": "ana", "name": "Ana", "type": "npc", "fields": {"hp": 3, "mp": 1}, "version": 2}
    live |= {"createdAt": "t0", "description": "A smith."}
    patched = character_record(
        {"id": "ana", "name": "Other", "fields": {"hp": 5}, "expectedVersion": 2},
        live,
        where="w",
        now="t1",
    )
    assert patched == {
        "id": "ana",
        "name": "Ana",  # the live name stays, as in Covel
        "type": "npc",
        "description": "A smith.",
        "fields": {"hp": 5, "mp": 1},
        "version": 3,
        "createdAt": "t0",
        "updatedAt": "t1",
    }
    # Unversioned: the record is replaced, version as given (1 by default).
    assert character_record({"id": "ana", "name": "Ann"}, live, where="w", now="t1") == {
        "id": "ana",
        "name": "Ann",
        "type": "npc",
        "version": 1,
        "createdAt": "t1",
        "updatedAt": "t1",
    }


@pytest.mark.parametrize(
    ("proposal", "where"),
    [
        ({"type": "plugin.data", "payload": "x"}, "proposal 0/payload: must be an object"),
        (
            {"type": "plugin.data", "payload": {"namespace": "", "key": "k", "value": 1}},
            "namespace must be a non-empty string",
        ),
        (
            {"type": "plugin.data", "payload": {"namespace": "n", "value": 1}},
            "key must be a non-empty string",
        ),
        (
            {"type": "plugin.data", "payload": {"namespace": "n", "key": "k"}},
            "exactly one of value or ops",
        ),
        ({"type": "plugin.data.batch", "payload": {"items": []}}, "items: must be a non-empty"),
        (
            {"type": "plugin.data.batch", "payload": {"items": [{"namespace": "n", "value": 1}]}},
            "items/0: key must be a non-empty string",
        ),
        ({"type": "plugin.data.batch", "payload": {"items": ["x"]}}, "items/0: must be an object"),
        ({"type": "plugin.data.delete", "payload": {"key": "k"}}, "namespace must be a non-empty"),
        ({"type": "event.emit", "payload": {"data": {}}}, "topic must be a non-empty string"),
        ({"type": "event.emit", "payload": {"topic": "t", "data": [1]}}, "data: must be an object"),
        ({"type": "lorebook.upsert", "payload": {"entries": []}}, "entries: must be a non-empty"),
    ],
)
def test_a_malformed_payload_is_refused_naming_the_field(proposal, where):
    problem = refused(proposal)
    assert problem.code == "proposal-invalid"
    assert where in problem.message


@pytest.mark.parametrize(
    ("proposal", "namespace"),
    [
        (
            {"type": "plugin.data", "payload": {"namespace": "_logs", "key": "k", "value": 1}},
            "_logs",
        ),
        (
            {
                "type": "plugin.data.batch",
                "payload": {"items": [{"namespace": "_jobs", "key": "k", "value": 1}]},
            },
            "_jobs",
        ),
        (
            {"type": "plugin.data.delete", "payload": {"namespace": "_lorebook", "key": "k"}},
            "_lorebook",
        ),
    ],
)
def test_a_framework_namespace_is_refused(proposal, namespace):
    problem = refused(proposal)
    assert problem.code == "namespace-reserved"
    assert f"namespace {namespace!r} is reserved for the framework" in problem.message


def test_a_proposal_whose_source_is_another_package_is_refused():
    problem = refused(
        {
            "type": "plugin.data",
            "source": {"pluginId": "bank", "runtimeId": "bank"},
            "payload": {"namespace": "n", "key": "k", "value": 1},
        }
    )
    assert problem.code == "proposal-not-owned"
    assert "its source is plugin 'bank'; a package writes only as itself (ledger)" in (
        problem.message
    )
    # The writer's own source, or none (a hand-written proposal), is the package.
    own = {"pluginId": "ledger", "runtimeId": "keep"}
    assert batch(
        {
            "type": "plugin.data",
            "source": own,
            "payload": {"namespace": "n", "key": "k", "value": 1},
        }
    ).writes


@pytest.mark.parametrize(
    ("entry", "code", "where"),
    [
        ({"content": "x", "strategy": "constant"}, "lore-entry-invalid", "entries/0/id"),
        ({"id": "a", "strategy": "constant"}, "lore-entry-invalid", "needs text content"),
        (
            {"id": "a", "content": "x", "strategy": "always"},
            "lore-entry-invalid",
            "strategy 'always'",
        ),
        ("gate", "lore-entry-invalid", "entries/0: must be an object"),
        (
            {"id": "a", "content": "x", "strategy": "constant", "owner": {"kind": "user"}},
            "lore-owner-mismatch",
            "cannot modify another owner's entry 'a'",
        ),
    ],
)
def test_a_bad_lore_entry_is_refused(entry, code, where):
    problem = refused({"type": "lorebook.upsert", "payload": {"entries": [entry]}})
    assert problem.code == code
    assert where in problem.message


def test_lore_fields_of_the_wrong_type_take_covels_defaults():
    lore = batch(
        {
            "type": "lorebook.upsert",
            "payload": {
                "entries": [
                    {
                        "id": "a",
                        "content": "x",
                        "strategy": "selective",
                        "keys": ["gate", 3, "dusk"],
                        "position": 5,
                        "insertionOrder": True,
                        "enabled": "yes",
                        "extra": {"tag": 1},
                        "owner": {"kind": "plugin", "pluginId": "ledger"},
                    }
                ]
            },
        }
    ).lore[0]
    assert lore["keys"] == ["gate", "dusk"]
    assert (lore["position"], lore["insertionOrder"], lore["enabled"]) == (
        "after_char_defs",
        100,
        True,
    )
    assert lore["extra"] == {"tag": 1}


def test_effects_plugin_data_becomes_one_write_or_a_batch():
    assert effects_proposals(None) == []
    assert effects_proposals([]) == []
    one = effects_proposals([{"namespace": "n", "key": "k", "value": 1}])
    assert [p["type"] for p in one] == ["plugin.data"]
    two = effects_proposals(
        [{"namespace": "n", "key": "a", "value": 1}, {"namespace": "n", "key": "b", "value": 2}]
    )
    assert [p["type"] for p in two] == ["plugin.data.batch"]
    with pytest.raises(ProposalRefused) as caught:
        effects_proposals({"namespace": "n"})
    assert caught.value.code == "effects-invalid"
    # A malformed entry is refused, not skipped as Covel's normalizer skips it.
    problem = refused(
        *effects_proposals([{"namespace": "n", "key": "a"}, {"key": "b", "value": 1}])
    )
    assert problem.code == "proposal-invalid"
    assert "effects.pluginData/payload/items/0" in problem.message


def test_covels_notification_shape_becomes_ours():
    assert notification_normalise(
        {"level": "warning", "title": "Low gold", "message": "3 left"}
    ) == {
        "level": "warning",
        "title": "Low gold",
        "body": "3 left",
    }
    assert notification_normalise({"message": "The gate opens.\nQuietly."}) == {
        "title": "The gate opens.",
        "body": "The gate opens.\nQuietly.",
    }
    assert notification_normalise({"message": "Short."}) == {"title": "Short."}
    assert notification_normalise({"title": "t", "body": "b"}) == {"title": "t", "body": "b"}


# ------------------------------------------------------------------ through a real turn


def runtime(code: str):
    return ({"schedule": {"stage": "post-turn"}, "function": {}}, code)


def session_with(tmp_path, alice, code: str, frontmatter=None, files=None):
    folder = write_plugin(
        tmp_path, "keeper", frontmatter or {}, runtimes={"keep": runtime(code)}, files=files
    )
    index_folder(folder)
    return session_create(owner=alice, world=make_world(owner=alice, plugins=["keeper"]))


def keeper_rows(session):
    return {
        f"{r.namespace}/{r.key}": r.value
        for r in PluginData.objects.filter(session=session, plugin_id="keeper")
    }


PROPOSE = """import {{ makeProposal, withPendingProposals }} from "@covel/plugin-handlers-utils";
export default async function handler(ctx) {{
  await ctx.pluginData.set("notes", "seen", true);
  const proposals = {proposals};
  return withPendingProposals({{ outcome: "success", value: {{ ok: true }}, effects: {effects} }},
    proposals.map(([type, payload]) => makeProposal(ctx, Date.now(), type, payload)));
}}"""


def propose(proposals: list, effects: dict | None = None) -> str:
    return PROPOSE.format(proposals=json.dumps(proposals), effects=json.dumps(effects or {}))


def test_an_unknown_proposal_type_drops_the_runtime_with_a_named_code(db, alice, tmp_path):
    code = propose(
        [["plugin.data", {"namespace": "notes", "key": "a", "value": 1}], ["quest.start", {}]]
    )
    session = session_with(tmp_path, alice, code)
    result = by_runtime(play(session, "go"))["keeper/keep"]
    assert result["status"] == "dropped"
    assert result["code"] == "unknown-proposal-type"
    assert "keeper/keep: proposal 1: unknown proposal type 'quest.start'" in result["reason"]
    assert result["output"] == {"ok": True}  # its output stands; none of its writes do
    assert keeper_rows(session) == {}


def test_ctx_plugin_data_cannot_write_a_framework_namespace(db, alice, tmp_path):
    code = """export default async function handler(ctx) {
      await ctx.pluginData.set("_jobs", "fake", { status: "done" });
      return { outcome: "success", value: {} };
    }"""
    session = session_with(tmp_path, alice, code)
    result = by_runtime(play(session, "go"))["keeper/keep"]
    assert (result["status"], result["code"]) == ("dropped", "namespace-reserved")
    assert "ctx.pluginData cannot write namespace '_jobs'" in result["reason"]
    assert keeper_rows(session) == {}


def test_a_batch_item_over_the_size_limit_refuses_the_whole_batch(db, alice, tmp_path):
    big = "x" * 300_000
    code = propose(
        [
            [
                "plugin.data.batch",
                {
                    "items": [
                        {"namespace": "notes", "key": "a", "value": 1},
                        {"namespace": "notes", "key": "big", "value": big},
                    ]
                },
            ]
        ]
    )
    session = session_with(tmp_path, alice, code)
    result = by_runtime(play(session, "go"))["keeper/keep"]
    assert (result["status"], result["code"]) == ("dropped", "write-refused")
    assert "keeper/notes/big" in result["reason"] and "[value-too-large]" in result["reason"]
    assert keeper_rows(session) == {}


def test_a_batch_item_against_a_dataset_schema_is_refused(db, alice, tmp_path):
    schema = {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}
    code = propose(
        [
            [
                "plugin.data.batch",
                {"items": [{"namespace": "cards", "key": "c1", "value": {"name": "no id"}}]},
            ]
        ]
    )
    session = session_with(
        tmp_path,
        alice,
        code,
        frontmatter={"contributes": {"datasets": {"cards": {"schema": "./cards.schema.json"}}}},
        files={"cards.schema.json": json.dumps(schema)},
    )
    result = by_runtime(play(session, "go"))["keeper/keep"]
    assert (result["status"], result["code"]) == ("dropped", "write-refused")
    assert "[schema-mismatch]" in result["reason"]


def test_effects_plugin_data_that_is_not_a_list_drops_the_runtime(db, alice, tmp_path):
    code = propose([], effects={"pluginData": {"namespace": "notes", "key": "a", "value": 1}})
    result = by_runtime(play(session_with(tmp_path, alice, code), "go"))["keeper/keep"]
    assert (result["status"], result["code"]) == ("dropped", "effects-invalid")


def test_an_event_emit_proposal_is_announced_when_the_runtime_succeeds(db, alice, tmp_path):
    code = propose([["event.emit", {"topic": "keeper.kept", "data": {"n": 2}}]])
    session = session_with(tmp_path, alice, code)
    result = by_runtime(play(session, "go"))["keeper/keep"]
    assert result["status"] == "succeeded", result
    events = [
        e.payload
        for e in SessionEvent.objects.filter(session=session, type="plugin.event").order_by("seq")
    ]
    assert [(e["topic"], e["payload"]) for e in events] == [("keeper.kept", {"n": 2})]


def test_a_notification_with_neither_title_nor_message_fails_the_runtime(db, alice, tmp_path):
    code = propose([], effects={"notifications": [{"level": "info", "message": "  "}]})
    result = by_runtime(play(session_with(tmp_path, alice, code), "go"))["keeper/keep"]
    assert (result["status"], result["code"]) == ("failed", "notification-invalid")
    assert "/effects/notifications/0/title" in result["reason"]


def test_a_package_without_a_messages_catalogue_gets_no_ctx_messages(db, alice, tmp_path):
    code = """import { translate } from "@covel/plugin-handlers-utils";
    export default async function handler(ctx) {
      return { outcome: "success", value: { has: ctx.messages !== undefined, text: translate(ctx, "Hello") } };
    }"""
    result = by_runtime(play(session_with(tmp_path, alice, code), "go"))["keeper/keep"]
    assert result["output"] == {"has": False, "text": "Hello"}


# ------------------------------------------------------------------ an agent's tool proposals

SCRIBE_ENTRY = """export default function register(covel) {
  const { tool, z, makeProposal, withPendingProposals } = covel.toolkit;
  covel.registerTool(tool({
    name: "scribe-write",
    description: "Write the scribe's records.",
    parameters: z.object({ mode: z.string() }),
    async execute({ mode }, ctx) {
      const now = Date.now();
      const proposals = mode === "bad"
        ? [makeProposal(ctx, now, "plugin.data", { namespace: "notes", key: "early", value: 1 }),
           makeProposal(ctx, now, "quest.start", {})]
        : [makeProposal(ctx, now, "plugin.data.batch", { items: [
             { namespace: "notes", key: "a", value: 1 }, { namespace: "notes", key: "b", value: 2 }] }),
           makeProposal(ctx, now, "lorebook.upsert", { entries: [
             { id: "quill", content: "The scribe's quill is silver.", strategy: "constant" }] })];
      return withPendingProposals({ ok: true }, proposals);
    },
  }));
}
"""


def scribe_session(tmp_path, alice):
    frontmatter = {
        "contributes": {"tools": ["scribe-write"]},
        "runtime": {
            "description": "Writes through its tool.",
            "schedule": {"stage": "post-turn"},
            "agent": {"model": "utility", "loop": {"maxSteps": 2}},
        },
    }
    folder = write_plugin(tmp_path, "scribe", frontmatter, files={"server/index.js": SCRIBE_ENTRY})
    index_folder(folder)
    return session_create(owner=alice, world=make_world(owner=alice, plugins=["scribe"]))


def tool_call(mode: str) -> dict:
    call = {"id": "c1", "name": "scribe-write", "arguments": json.dumps({"mode": mode})}
    return {"toolCalls": [call]}


def test_an_agents_tool_proposals_are_committed_like_a_functions(db, alice, tmp_path):
    with StandInModel([tool_call("good"), {"content": "done"}]) as model:
        ModelSlot.objects.create(name="utility", base_url=model.base_url, model="stand-in")
        session = scribe_session(tmp_path, alice)
        result = by_runtime(play(session, "write"))["scribe"]
    assert result["status"] == "succeeded", result
    rows = {
        f"{r.namespace}/{r.key}": r.value
        for r in PluginData.objects.filter(session=session, plugin_id="scribe")
    }
    assert rows["notes/a"] == 1 and rows["notes/b"] == 2
    assert [e["id"] for e in selectors.session_lore(session=session)] == ["quill"]


def test_an_agents_tool_with_an_unknown_proposal_writes_nothing_and_tells_the_model(
    db, alice, tmp_path
):
    with StandInModel([tool_call("bad"), {"content": "done"}]) as model:
        ModelSlot.objects.create(name="utility", base_url=model.base_url, model="stand-in")
        session = scribe_session(tmp_path, alice)
        play(session, "write")
        answer = json.dumps(model.requests[1]["messages"][-1])
    assert "unknown proposal type 'quest.start'" in answer
    assert "[unknown-proposal-type]" in answer
    # The call's plugin.data before it is not kept either: a tool's proposals are all or none.
    assert not PluginData.objects.filter(session=session, plugin_id="scribe").exists()


def test_an_rpc_actions_immediate_write_to_a_framework_namespace_is_refused(db, alice, tmp_path):
    entry = """export default function register(covel) {
      covel.registerRpc("forge", async (payload, ctx) => {
        try {
          await ctx.store.setPluginData({ namespace: "_runtime_jobs", key: "j1", value: { status: "done" } });
          return { ok: true };
        } catch (error) {
          return { ok: false, error: `${error.code}: ${error.message}` };
        }
      });
    }
    """
    folder = write_plugin(
        tmp_path,
        "forger",
        {"contributes": {"actions": ["forge"]}},
        files={"server/index.js": entry},
    )
    index_folder(folder)
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["forger"]))
    answer = session_rpc(session=session, plugin="forger", action="forge", payload={})
    assert answer["value"]["ok"] is False
    assert answer["value"]["error"].startswith(
        "namespace-reserved: forger: namespace '_runtime_jobs'"
    )
    assert not PluginData.objects.filter(session=session, plugin_id="forger").exists()


def test_an_rpc_action_and_a_guard_get_ctx_messages_in_the_sessions_language(db, alice, tmp_path):
    entry = """import { translate } from "@covel/plugin-handlers-utils";
    export default function register(covel) {
      covel.registerRpc("greet", async (payload, ctx) => ({ text: translate(ctx, "Welcome, {name}", { name: "Ana" }) }));
    }
    """
    guard = """import { translate } from "@covel/plugin-handlers-utils";
    export default async function guard(ctx) {
      return { skip: true, reason: translate(ctx, "Not now") };
    }
    """
    frontmatter = {
        "contributes": {"actions": ["greet"]},
        "runtime": {"schedule": {"stage": "post-turn"}, "function": {}, "guard": "./guard.js"},
    }
    folder = write_plugin(
        tmp_path,
        "greeter",
        frontmatter,
        handler='export default async function h() { return { outcome: "success", value: {} }; }',
        files={
            "server/index.js": entry,
            "guard.js": guard,
            "locales/zh.yaml": 'messages:\n  "Welcome, {name}": "欢迎，{name}"\n  Not now: 现在不行\n',
        },
    )
    index_folder(folder)
    world = make_world(owner=alice, plugins=["greeter"])
    session = session_create(owner=alice, world=world, locale="zh-CN")
    assert session_rpc(session=session, plugin="greeter", action="greet")["value"] == {
        "text": "欢迎，Ana"
    }
    result = by_runtime(play(session, "hi"))["greeter"]
    assert (result["status"], result["code"]) == ("skipped", "guard-skipped")
    assert result["reason"] == "greeter: 现在不行"


# ------------------------------------------------------------------ Covel's other types, played

SHEET = {"title": "Your name?", "fields": [{"name": "who", "label": "Who are you?"}]}


def storied_session(tmp_path, alice, code: str):
    """keeper's post-turn runtime next to the bundled storyteller (the turn's story)."""
    index_bundled("storyteller")
    return session_with(tmp_path, alice, code)


def session_rows(session) -> dict[str, object]:
    return {
        f"{r.namespace}/{r.key}": r.value
        for r in PluginData.objects.filter(session=session, plugin_id="_session")
    }


def last_turn(session) -> Turn:
    return session.turns.order_by("-created_at").first()


def test_narrative_append_adds_to_the_story_after_the_storyteller(db, alice, tmp_path):
    code = propose(
        [
            ["narrative.append", {"content": "A bell rings twice.", "kind": "plugin"}],
            ["narrative.append", {"content": "(The tide is turning.)", "kind": "system"}],
        ]
    )
    session = storied_session(tmp_path, alice, code)
    summary = play(session, "we wait on the quay")
    assert by_runtime(summary)["keeper/keep"]["status"] == "succeeded"
    turn = last_turn(session)
    story, bell, tide = turn.narrative_text.split("\n\n")
    assert story and story == by_runtime(summary)["storyteller"]["output"]["narrativeOutput"]
    assert (bell, tide) == ("A bell rings twice.", "(The tide is turning.)")
    assert summary["narrativeText"] == turn.narrative_text
    assert turn.commit["narrative"] == [
        {"runtime": "keeper/keep", "content": "A bell rings twice.", "kind": "plugin"},
        {"runtime": "keeper/keep", "content": "(The tide is turning.)", "kind": "system"},
    ]
    told = [
        e.payload["text"]
        for e in SessionEvent.objects.filter(session=session, type="narrative").order_by("seq")
    ]
    assert told[-1] == turn.narrative_text  # the page gets the whole story


def test_interaction_request_becomes_a_pending_form(db, alice, tmp_path):
    code = propose(
        [
            [
                "interaction.request",
                {"interactionId": "name-ask", "type": "form", "data": SHEET},
            ]
        ]
    )
    session = session_with(tmp_path, alice, code)
    assert by_runtime(play(session, "hello"))["keeper/keep"]["status"] == "succeeded"
    (form,) = selectors.interaction_pending_list(session=session)
    assert (form.interaction_id, form.plugin_id, form.runtime_id) == (
        "name-ask",
        "keeper",
        "keeper/keep",
    )
    assert form.form["title"] == "Your name?"
    assert [f["name"] for f in form.form["fields"]] == ["who"]
    assert SessionEvent.objects.filter(session=session, type="interaction.created").exists()


def test_ui_render_is_kept_with_its_turn_and_shown_escaped(db, alice, tmp_path):
    parts = [
        {"id": "p1", "type": "text", "status": "success", "content": "<b>Low tide</b>"},
        {"id": "p2", "type": "stats", "status": "success", "content": {"depth": 2}},
    ]
    code = propose([["ui.render", {"parts": parts, "layout": "stream"}]])
    session = session_with(tmp_path, alice, code)
    summary = play(session, "look at the harbor")
    (block,) = last_turn(session).blocks
    assert block["type"] == "ui.render" and block["data"]["parts"] == parts
    assert block["meta"] == {
        "pluginId": "keeper",
        "runtimeId": "keeper/keep",
        "turnId": summary["turnId"],
    }
    assert summary["blocks"] == [block]
    client = Client()
    client.force_login(alice)
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert f'data-block="{block["id"]}"' in page
    assert "&lt;b&gt;Low tide&lt;/b&gt;" in page and "<b>Low tide" not in page
    assert "&quot;depth&quot;: 2" in page
    rows = client.get(f"/api/sessions/{session.pk}/turns").json()["items"]
    assert rows[-1]["blocks"] == [block]


def test_state_patch_and_working_memory_are_the_sessions(db, alice, tmp_path):
    code = propose(
        [
            ["state.patch", {"table": "ship", "field": "hull", "value": 7, "reason": "repairs"}],
            ["working_memory.set", {"scope": "story", "key": "omen", "value": {"seen": True}}],
        ]
    )
    session = session_with(tmp_path, alice, code)
    summary = play(session, "we mend the ship")
    rows = session_rows(session)
    hull = rows["state/ship/hull"]
    assert {k: hull[k] for k in ("table", "field", "value", "reason", "changedBy", "turnId")} == {
        "table": "ship",
        "field": "hull",
        "value": 7,
        "reason": "repairs",
        "changedBy": "keeper/keep",
        "turnId": summary["turnId"],
    }
    omen = rows["working_memory/story/omen"]
    assert (omen["scope"], omen["key"], omen["value"]) == ("story", "omen", {"seen": True})
    assert keeper_rows(session) == {"notes/seen": True}


CAST = """import { makeProposal, withPendingProposals } from "@covel/plugin-handlers-utils";
export default async function handler(ctx) {
  const seen = (ctx.world.characters ?? []).map((c) => `${c.id}:${c.name}:${c.version}`);
  const upsert = ctx.logicalTurn === 1
    ? { id: "ana", name: "Ana", type: "companion", fields: { hp: 3, mp: 1 }, mirrorPluginId: "keeper" }
    : { id: "ana", name: "Ignored", fields: { hp: 5 }, expectedVersion: 1 };
  return withPendingProposals({ outcome: "success", value: { seen } },
    [makeProposal(ctx, Date.now(), "character.upsert", upsert)]);
}"""


def test_character_upsert_is_a_session_character_seen_from_the_next_turn(db, alice, tmp_path):
    session = session_with(tmp_path, alice, CAST)
    first = by_runtime(play(session, "a stranger arrives"))["keeper/keep"]
    assert first["status"] == "succeeded", first
    assert first["output"] == {"seen": []}
    ana = session_rows(session)["characters/ana"]
    assert (ana["name"], ana["type"], ana["version"], ana["fields"]) == (
        "Ana",
        "companion",
        1,
        {"hp": 3, "mp": 1},
    )
    assert keeper_rows(session) == {"characters/ana": ana}  # its own mirror, as in Covel
    second = by_runtime(play(session, "she heals"))["keeper/keep"]
    assert second["output"] == {"seen": ["ana:Ana:1"]}
    ana = session_rows(session)["characters/ana"]
    assert (ana["name"], ana["version"], ana["fields"]) == ("Ana", 2, {"hp": 5, "mp": 1})
    assert [c["id"] for c in selectors.session_characters(session=session)] == ["ana"]


REFUSALS = [
    ("narrative.append", {"content": 3}, "narrative-invalid", "payload/content"),
    ("narrative.append", {"content": "x", "kind": 2}, "narrative-invalid", "payload/kind"),
    ("interaction.request", {"data": SHEET}, "interaction-invalid", "payload/interactionId"),
    (
        "interaction.request",
        {"interactionId": "q", "type": "poll"},
        "interaction-invalid",
        "'poll'",
    ),
    (
        "interaction.request",
        {"interactionId": "q", "data": [1]},
        "interaction-invalid",
        "payload/data: must be an object",
    ),
    (
        "interaction.request",
        {"interactionId": "q", "type": "choice"},
        "interaction-type-unsupported",
        "shows forms only, not a choice",
    ),
    (
        "interaction.request",
        {"interactionId": "q", "title": "t", "fields": [{"label": "No name"}]},
        "form-invalid",
        "payload/fields/0",
    ),
    ("ui.render", {"parts": []}, "ui-render-invalid", "payload/parts: must be a non-empty"),
    ("ui.render", {"parts": ["x"]}, "ui-render-invalid", "payload/parts/0: must be an object"),
    ("state.patch", {"field": "f", "value": 1}, "state-patch-invalid", "payload/table"),
    (
        "state.patch",
        {"table": "t", "field": "", "value": 1},
        "state-patch-invalid",
        "payload/field",
    ),
    ("state.patch", {"table": "t", "field": "f"}, "state-patch-invalid", "payload/value"),
    (
        "state.patch",
        {"table": "t", "field": "f", "value": 1, "reason": 2},
        "state-patch-invalid",
        "payload/reason",
    ),
    (
        "working_memory.set",
        {"scope": "global", "key": "k", "value": 1},
        "working-memory-invalid",
        "'global' is not one of player, story, shared",
    ),
    (
        "working_memory.set",
        {"scope": "story", "key": "", "value": 1},
        "working-memory-invalid",
        "payload/key",
    ),
    ("working_memory.set", {"scope": "story", "key": "k"}, "working-memory-invalid", "value"),
    (
        "working_memory.set",
        {"scope": "story", "key": "k", "value": 1, "schemaRef": 4},
        "working-memory-invalid",
        "payload/schemaRef",
    ),
    ("character.upsert", {"id": "a", "name": "A", "age": 9}, "character-invalid", "payload/age"),
    ("character.upsert", {"id": "", "name": "A"}, "character-invalid", "payload/id"),
    ("character.upsert", {"id": "a", "name": "  "}, "character-invalid", "payload/name"),
    ("character.upsert", {"id": "a", "name": "A", "type": ""}, "character-invalid", "payload/type"),
    (
        "character.upsert",
        {"id": "a", "name": "A", "description": 1},
        "character-invalid",
        "payload/description",
    ),
    ("character.upsert", {"id": "a", "name": "A", "version": 0}, "character-invalid", "version"),
    (
        "character.upsert",
        {"id": "a", "name": "A", "createdAt": 5},
        "character-invalid",
        "payload/createdAt",
    ),
    (
        "character.upsert",
        {"id": "a", "name": "A", "mirrorPluginIds": "keeper"},
        "character-invalid",
        "payload/mirrorPluginIds",
    ),
    (
        "character.upsert",
        {"id": "a", "name": "A", "mirrorPluginIds": ["keeper", "character-panel"]},
        "character-mirror-not-owned",
        "into the data of 'character-panel'",
    ),
    (
        "character.upsert",
        {"id": "a", "name": "A", "expectedVersion": 1},
        "character-version-conflict",
        "whose record does not exist",
    ),
    (
        "character.upsert",
        {"id": "a", "name": "A", "type": "villain"},
        "character-type-unknown",
        "'villain' is not a character type here",
    ),
    (
        "asset.generate",
        {"ref": {"id": "m1", "mime": "image/png", "size": 9}, "modality": "image"},
        "asset-store-unavailable",
        "no media store",
    ),
]


@pytest.mark.parametrize(("kind", "payload", "code", "where"), REFUSALS)
def test_each_check_of_covels_other_types_drops_the_runtime(
    db, alice, tmp_path, kind, payload, code, where
):
    code_js = propose([["narrative.append", {"content": "Kept?"}], [kind, payload]])
    session = session_with(tmp_path, alice, code_js)
    result = by_runtime(play(session, "go"))["keeper/keep"]
    assert (result["status"], result["code"]) == ("dropped", code), result
    assert where in result["reason"] and f"[{code}]" in result["reason"]
    assert "keeper/keep: proposal 1" in result["reason"]
    turn = last_turn(session)
    # Nothing of the run is kept: no data, no story text, no block, no form.
    assert keeper_rows(session) == {} and session_rows(session) == {}
    assert "Kept?" not in turn.narrative_text and turn.blocks == []
    assert not selectors.interaction_pending_list(session=session)


def test_a_second_player_character_is_refused(db, alice, tmp_path):
    players = propose(
        [
            ["character.upsert", {"id": "a", "name": "A", "type": "player"}],
            ["character.upsert", {"id": "b", "name": "B", "type": "player"}],
        ]
    )
    result = by_runtime(play(session_with(tmp_path, alice, players), "go"))["keeper/keep"]
    assert (result["status"], result["code"]) == ("dropped", "character-player-taken")
    assert "at most one player character (a, b would be)" in result["reason"]


def test_a_form_id_asked_twice_is_refused(db, alice, tmp_path):
    ask = {"interactionId": "same", "data": SHEET}
    twice = propose([["interaction.request", ask], ["interaction.request", ask]])
    result = by_runtime(play(session_with(tmp_path, alice, twice), "go"))["keeper/keep"]
    assert (result["status"], result["code"]) == ("dropped", "form-invalid")
    assert "'same' is already used in this session [uniqueInteractionId]" in result["reason"]


def test_a_manual_runs_ui_block_is_on_the_page_too(db, alice, tmp_path):
    code = propose([["ui.render", {"parts": [{"id": "p", "type": "text", "content": "Hand."}]}]])
    manual = ({"schedule": {"trigger": {"type": "manual"}}, "function": {}}, code)
    folder = write_plugin(tmp_path, "keeper", {}, runtimes={"keep": manual})
    index_folder(folder)
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["keeper"]))
    client = Client()
    client.force_login(alice)
    answer = client.post(
        f"/api/sessions/{session.pk}/runtimes/keeper/keep/run",
        json.dumps({"payload": {}}),
        content_type="application/json",
    )
    assert answer.status_code == 200, answer.content
    (block,) = last_turn(session).blocks
    assert last_turn(session).kind == "manual"
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert f'data-block="{block["id"]}"' in page and "Hand." in page
