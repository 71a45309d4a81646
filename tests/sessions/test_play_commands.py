"""Slash commands: arguments parsed per contributes.commands (types, required, variadic, choices,
aliases), errors naming the argument, and the RPC action they run."""

from __future__ import annotations

import json

import pytest
import test_play_support as support
from django.test import Client
from test_play_support import index_bundled, index_folder, make_world, write_plugin

from catalogue.manifest.loader import load_package
from sessions.commands import CommandError, parse_command
from sessions.models import PluginData
from sessions.services import session_command, session_create

bundled_world = support.bundled_world  # a shared fixture

COMMANDS = {
    "contributes": {
        "actions": ["cast", "where"],
        "commands": [
            {
                "name": "cast",
                "aliases": ["c"],
                "description": "Cast a spell.",
                "action": "cast",
                "arguments": [
                    {
                        "name": "school",
                        "type": "string",
                        "required": True,
                        "choices": ["fire", "frost"],
                    },
                    {"name": "power", "type": "integer", "required": True},
                    {"name": "ratio", "type": "number"},
                    {"name": "loud", "type": "boolean"},
                    {"name": "words", "variadic": True},
                ],
            },
            {
                "name": "where",
                "description": "Say where the session stands.",
                "action": "where",
                "context": ["session", "active-runtimes", "models"],
            },
            {
                "name": "sum",
                "description": "Add numbers.",
                "action": "cast",
                "arguments": [
                    {"name": "values", "type": "integer", "variadic": True, "required": True}
                ],
            },
        ],
    }
}
ENTRY = """export default function register(covel) {
  covel.registerRpc("cast", async (payload, ctx) => {
    await ctx.store.setPluginData({ namespace: "casts", key: "last", value: ctx.command?.args ?? payload });
    return { ok: true, data: { args: ctx.command?.args ?? null, payload } };
  });
  covel.registerRpc("where", async (_payload, ctx) => ({ ok: true, data: ctx.environment ?? null }));
}
"""


@pytest.fixture
def spells(tmp_path):
    folder = write_plugin(tmp_path, "spells", COMMANDS, files={"server/index.js": ENTRY})
    result = load_package(folder, host_version="0.1.0")
    assert result.ok, [str(e) for e in result.errors]
    return folder, result.manifest


def test_arguments_are_typed_and_the_variadic_last_one_takes_the_rest(spells):
    _, manifest = spells
    parsed = parse_command('/cast fire 3 0.5 yes "an old" word', [manifest])
    assert (parsed.package, parsed.name, parsed.action) == ("spells", "cast", "cast")
    assert parsed.args == {
        "school": "fire",
        "power": 3,
        "ratio": 0.5,
        "loud": True,
        "words": "an old word",
    }
    assert parse_command("/c frost -2", [manifest]).args == {
        "school": "frost",
        "power": -2,
    }  # an alias
    assert parse_command("/sum 1 2 3", [manifest]).args == {"values": [1, 2, 3]}


@pytest.mark.parametrize(
    "text,code,argument,words",
    [
        ("/cast", "missing-argument", "school", "argument school is required"),
        ("/cast fire", "missing-argument", "power", "argument power is required"),
        ("/cast water 3", "invalid-choice", "school", "must be one of fire, frost"),
        ("/cast fire three", "invalid-type", "power", "must be an integer, not 'three'"),
        ("/cast fire 3 lots", "invalid-type", "ratio", "must be a number"),
        ("/cast fire 3 1 maybe", "invalid-type", "loud", "must be true or false"),
        ("/sum", "missing-argument", "values", "argument values is required"),
        ("/sum 1 x", "invalid-type", "values", "must be an integer, not 'x'"),
        ("/heal 3", "unknown-command", None, "no command /heal"),
        ('/cast "fire', "syntax", None, "cannot read the command"),
    ],
)
def test_bad_arguments_are_refused_naming_the_argument(spells, text, code, argument, words):
    _, manifest = spells
    with pytest.raises(CommandError) as refused:
        parse_command(text, [manifest])
    assert refused.value.code == code
    assert refused.value.argument == argument
    assert words in refused.value.message


def test_the_dice_roll_command_runs_its_action_over_the_api(bundled_world, alice):
    session = session_create(owner=alice, world=bundled_world)
    client = Client()
    client.force_login(alice)
    url = f"/api/sessions/{session.pk}/rpc/dice/roll"
    # Dice notation as players write it (Covel's dice-check: one NdM argument), handed to the
    # action as Covel's invocation {args: {...}}.
    answer = client.post(
        url, json.dumps({"command": "/roll 3d6+2 sneak attack"}), content_type="application/json"
    )
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["command"]["args"] == {"notation": "3d6+2", "label": "sneak attack"}
    roll = body["value"]["data"]
    assert body["value"]["ok"] is True
    assert len(roll["dice"]) == 3 and all(1 <= d <= 6 for d in roll["dice"])
    assert roll["total"] == sum(roll["dice"]) + 2
    assert roll["label"] == "sneak attack"
    assert body["value"]["message"].startswith("3d6+2: ")
    # The older form, a count and then the die, reads the same way.
    older = client.post(
        url, json.dumps({"command": "/roll 2 d8+1"}), content_type="application/json"
    )
    assert older.json()["value"]["data"]["notation"] == "2d8+1"

    bad = client.post(url, json.dumps({"command": "/roll many"}), content_type="application/json")
    assert bad.status_code == 200
    assert bad.json()["value"] == {
        "ok": False,
        "message": 'Use /roll NdM+K, for example /roll 2d6+1 sneak attack (not "many")',
        "data": {"code": "invalid-notation"},
    }
    big = client.post(url, json.dumps({"command": "/roll 30d6"}), content_type="application/json")
    assert big.json()["value"]["ok"] is False
    assert "count must be an integer from 1 to 20" in big.json()["value"]["message"]
    # Nothing after /r rolls one die of the default 20 sides.
    one = client.post(url, json.dumps({"command": "/r"}), content_type="application/json")
    assert one.status_code == 200 and one.json()["value"]["data"]["notation"] == "1d20"
    # The composer's endpoint finds the package by the command (an alias here).
    typed = client.post(
        f"/api/sessions/{session.pk}/commands",
        json.dumps({"text": "/r 2d4"}),
        content_type="application/json",
    )
    assert typed.status_code == 200 and typed.json()["plugin"] == "dice"
    assert len(typed.json()["value"]["data"]["dice"]) == 2


def test_an_action_writes_at_once_through_the_store(db, alice, spells):
    folder, _ = spells
    index_folder(folder)
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["spells"]))
    client = Client()
    client.force_login(alice)
    answer = client.post(
        f"/api/sessions/{session.pk}/rpc/spells/cast",
        json.dumps({"payload": {"from": "ui"}}),
        content_type="application/json",
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["value"]["data"]["payload"] == {"from": "ui"}
    assert PluginData.objects.get(
        session=session, plugin_id="spells", namespace="casts", key="last"
    ).value == {"from": "ui"}
    unknown = client.post(
        f"/api/sessions/{session.pk}/rpc/spells/vanish",
        json.dumps({}),
        content_type="application/json",
    )
    assert unknown.status_code == 404 and unknown.json()["code"] == "unknown_action"


def test_a_command_hands_its_action_covels_invocation(db, alice, spells):
    """Covel's command dispatch hands the action its RpcCommandInvocation as the payload and as
    ctx.command (plugin-handlers-utils PluginRpcContext.command): a handler reads payload.args.
    The hub handed the parsed arguments alone as the payload before."""
    folder, _ = spells
    index_folder(folder)
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["spells"]))
    client = Client()
    client.force_login(alice)
    answer = client.post(
        f"/api/sessions/{session.pk}/commands",
        json.dumps({"text": "/c frost 2 0.5 yes old words"}),
        content_type="application/json",
    )
    assert answer.status_code == 200, answer.content
    payload = answer.json()["value"]["data"]["payload"]
    invocation_id = payload.pop("invocationId")
    assert len(invocation_id) == 36  # a fresh id per invocation
    assert payload == {
        "command": "c",
        "canonical": "cast",
        "name": "cast",
        "raw": "/c frost 2 0.5 yes old words",
        "argv": ["frost", "2", "0.5", "yes", "old", "words"],
        "args": {"school": "frost", "power": 2, "ratio": 0.5, "loud": True, "words": "old words"},
        "commandId": "spells:cast",
        "source": "composer",
    }
    assert answer.json()["value"]["data"]["args"] == payload["args"]


def test_a_commands_context_scopes_give_covels_environment(db, alice, spells):
    """Covel's buildCommandEnvironment (apps/server .../session/commands.ts): capturedAt, the
    session record, and each active runtime with its slot; no environment without scopes."""
    from agents.models import ModelSlot

    folder, _ = spells
    index_folder(folder)
    index_bundled("story-agent")
    ModelSlot.objects.create(name="story", base_url="http://127.0.0.1:9/v1", model="tale-1")
    world = make_world(owner=alice, plugins=["spells", "story-agent"])
    session = session_create(owner=alice, world=world)
    env = session_command(session=session, text="/where")["value"]["data"]
    assert env.pop("capturedAt")
    assert env["session"] == {
        "id": str(session.pk),
        "worldId": "harbor",
        "status": "active",
        "phase": session.phase,
        "locale": session.locale,
        "turnCount": 0,
    }
    story = next(r for r in env["activeRuntimes"] if r["id"] == "story-agent")
    assert story == {
        "id": "story-agent",
        "pluginId": "story-agent",
        "runtimeType": "agent",
        "outputKind": "story",
        "stage": "narrative",
        "outputContract": "narrative-engine@2",
        "model": {"slot": "story", "source": "manifest", "resolved": "tale-1"},
    }
    assert "api" not in json.dumps(env).lower()  # no key, no URL
    # A command without scopes gets no environment at all.
    cast = session_command(session=session, text="/cast fire 1")["value"]["data"]
    assert cast["payload"]["args"] == {"school": "fire", "power": 1}
