"""Forms and notifications end to end: a runtime asks, the turn commits it, the player answers.

The `sheet` package is written here and runs in the real Node host: its function runtime asks
for a character sheet (or misbehaves) depending on the player's words, and its entry file
registers the `point-buy` validator. Alice owns the session; Bob is staff and may answer for
support; Charlie is another player and must not even learn the form exists; the anonymous
visitor gets 401.
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
from eventlog.models import SessionEvent
from sessions.models import Interaction, PluginData, Turn
from sessions.services import session_create

SHEET = """
const SHEET = {
  type: "form",
  interactionId: "sheet-1",
  title: "Your character",
  notice: "Fill in your character.",
  submitLabel: "Create",
  validation: { name: "point-buy" },
  fields: [
    { name: "name", label: "Name", type: "text", required: true },
    { name: "strength", label: "Strength", type: "integer", min: 3, max: 18, required: true },
    { name: "calling", label: "Class", type: "select", options: ["fighter", "wizard"], required: true },
    { name: "brave", label: "Brave", type: "checkbox" },
    { name: "notes", label: "Notes", type: "textarea" },
  ],
};
const NOTICE = { title: "A bell rings", body: "Far away.", level: "warning" };

export default async function handler(ctx) {
  const seen = { message: ctx.playerMessage, actions: ctx.playerActions };
  const said = ctx.playerMessage;
  if (said === "ask") {
    return { outcome: "success", value: seen, effects: { interactions: [SHEET], notifications: [NOTICE] } };
  }
  if (said === "fail") {
    return { outcome: "failed", error: "the sheet is torn", effects: { interactions: [SHEET], notifications: [NOTICE] } };
  }
  if (said === "undeclared") {
    const form = { ...SHEET, interactionId: "sheet-2", validation: { name: "nowhere" } };
    return { outcome: "success", value: seen, effects: { interactions: [form] } };
  }
  if (said === "xss") {
    const form = {
      ...SHEET,
      interactionId: "sheet-x",
      title: "<script>alert('title')</script>",
      notice: "<b>bold</b>",
      fields: [{ name: "name", label: "<img src=x onerror=alert(1)>", type: "text" }],
    };
    return { outcome: "success", value: seen, effects: { interactions: [form] } };
  }
  return { outcome: "success", value: seen };
}
"""

ENTRY = """
export default function register(covel) {
  covel.registerFormValidator("point-buy", (values, _data, context) => {
    if (values.name === "Nobody") return "Nobody cannot play.";
    const text = "Strength is at most 15.";
    if (Number(values.strength) > 15) {
      return [{ field: "strength", message: context.messages?.translations?.[text] ?? text }];
    }
    return undefined;
  });
}
"""

GOOD = {"name": "Ana", "strength": 12, "calling": "wizard", "brave": True}


def answer_issues(response) -> list[dict]:
    """A refusal's details.issues read back as the form's {field, message} (the field is the
    pointer's last token under /body/values; the whole form is /body/values itself)."""
    found = []
    for item in response.json()["details"]["issues"]:
        assert item["code"] == "form_rejected" and item["path"].startswith("/body/values")
        field = item["path"].removeprefix("/body/values").removeprefix("/") or None
        found.append({"field": field, "message": item["message"]})
    return found


def sheet_session(tmp_path, alice, *, locale: str = "en", files: dict | None = None):
    folder = write_plugin(
        tmp_path,
        "sheet",
        {
            "contributes": {"forms": ["point-buy"]},
            "runtime": {"schedule": {"stage": "post-turn"}, "function": {}},
        },
        handler=SHEET,
        files={
            "server/index.js": ENTRY,
            "locales/fr.messages.json": json.dumps(
                {"Strength is at most 15.": "La force est au plus 15."}
            ),
            **(files or {}),
        },
    )
    index_folder(folder)
    world = make_world(owner=alice, plugins=["sheet"])
    return session_create(owner=alice, world=world, locale=locale)


def client_for(user=None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def submit(client: Client, session, values: dict, interaction_id: str = "sheet-1"):
    return client.post(
        f"/api/sessions/{session.pk}/interactions/{interaction_id}",
        json.dumps({"values": values}),
        content_type="application/json",
    )


def events(session, type: str) -> list[dict]:
    return [
        e.payload for e in SessionEvent.objects.filter(session=session, type=type).order_by("seq")
    ]


def test_a_functions_form_and_notice_are_committed_with_its_turn(db, alice, tmp_path):
    session = sheet_session(tmp_path, alice)
    result = play(session, "ask")
    assert by_runtime(result)["sheet"]["status"] == "succeeded"
    row = Interaction.objects.get(session=session)
    assert (row.interaction_id, row.kind, row.status) == ("sheet-1", "form", "pending")
    assert (row.plugin_id, row.runtime_id, str(row.source_turn_id)) == (
        "sheet",
        "sheet",
        result["turnId"],
    )
    assert row.form["notice"] == "Fill in your character."
    assert row.form["validation"] == {"name": "point-buy"}
    # A plain-string option is stored as {value, label}, the one shape the page shows.
    assert row.form["fields"][2]["options"] == [
        {"value": "fighter", "label": "fighter"},
        {"value": "wizard", "label": "wizard"},
    ]
    [created] = events(session, "interaction.created")
    assert created["interactionId"] == "sheet-1" and created["pluginId"] == "sheet"
    assert created["form"]["title"] == "Your character"
    [notice] = events(session, "notification.created")
    assert notice == {
        "turnId": result["turnId"],
        "pluginId": "sheet",
        "runtimeId": "sheet",
        "title": "A bell rings",
        "body": "Far away.",
        "level": "warning",
    }


def test_a_failed_runtimes_form_and_notice_are_not_committed(db, alice, tmp_path):
    session = sheet_session(tmp_path, alice)
    result = play(session, "fail")
    assert by_runtime(result)["sheet"]["status"] == "failed"
    assert not Interaction.objects.filter(session=session).exists()
    assert events(session, "interaction.created") == []
    assert events(session, "notification.created") == []


def test_an_accepted_answer_runs_the_follow_up_turn_once(db, alice, tmp_path):
    session = sheet_session(tmp_path, alice)
    play(session, "ask")
    answer = submit(client_for(alice), session, GOOD)
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["kind"] == "player" and body["status"] == "committed" and body["number"] == 2
    seen = by_runtime(body)["sheet"]["output"]
    assert seen["message"] == (
        "[Player input] Your character: Name: Ana; Strength: 12; Class: wizard; Brave: yes"
    )
    assert seen["actions"] == [
        {
            "seat": "seat-1",
            "kind": "form",
            "character": None,  # the harbor test world has no player character
            "actorId": None,
            "text": None,
            "fields": GOOD,
            "interactionId": "sheet-1",
        }
    ]
    row = Interaction.objects.get(session=session, interaction_id="sheet-1")
    assert row.status == "submitted" and row.values == GOOD and row.submitted_at is not None
    assert str(row.answer_turn_id) == body["turnId"]
    assert Turn.objects.get(pk=body["turnId"]).player_message == seen["message"]

    again = submit(client_for(alice), session, GOOD)
    assert again.status_code == 409
    assert again.json()["code"] == "interaction_already_submitted"
    [error] = events(session, "error.occurred")
    assert error["code"] == "interaction_already_submitted"
    assert error["interactionId"] == "sheet-1"
    assert Turn.objects.filter(session=session).count() == 2


@pytest.mark.parametrize(
    "values,issues",
    [
        (
            {"strength": 12, "calling": "wizard"},
            [{"field": "name", "message": "This field is required."}],
        ),
        (
            {**GOOD, "strength": 19},
            [{"field": "strength", "message": "Enter at most 18."}],
        ),
        (
            {**GOOD, "strength": 12.5},
            [{"field": "strength", "message": "Enter a whole number."}],
        ),
        (
            {**GOOD, "strength": "12"},
            [{"field": "strength", "message": "Enter a number."}],
        ),
        (
            {**GOOD, "calling": "thief"},
            [{"field": "calling", "message": "Choose one of the options."}],
        ),
        (
            {**GOOD, "brave": "yes"},
            [{"field": "brave", "message": "Answer yes or no."}],
        ),
        (
            {**GOOD, "age": 30},
            [{"field": "age", "message": "age is not a field of this form."}],
        ),
        (
            {"name": "", "strength": 2, "calling": ""},
            [
                {"field": "name", "message": "This field is required."},
                {"field": "strength", "message": "Enter at least 3."},
                {"field": "calling", "message": "This field is required."},
            ],
        ),
    ],
)
def test_the_fields_own_checks_refuse_with_every_issue_and_store_nothing(
    db, alice, tmp_path, values, issues
):
    session = sheet_session(tmp_path, alice)
    play(session, "ask")
    answer = submit(client_for(alice), session, values)
    assert answer.status_code == 422, answer.content
    assert answer.json()["code"] == "form_rejected"
    assert answer_issues(answer) == issues
    row = Interaction.objects.get(session=session)
    assert (row.status, row.values, row.answer_turn_id) == ("pending", None, None)
    assert Turn.objects.filter(session=session).count() == 1
    [error] = events(session, "error.occurred")
    assert error["code"] == "form_rejected" and error["interactionId"] == "sheet-1"
    assert error["issues"] == issues


def test_a_validator_reads_covels_messages_section_in_the_sessions_language(db, alice, tmp_path):
    # Covel's place for code text: the messages: section of locales/<locale>.yaml.
    catalogue = 'messages:\n  "Strength is at most 15.": "力量最多为 15。"\n'
    session = sheet_session(tmp_path, alice, locale="zh-CN", files={"locales/zh.yaml": catalogue})
    play(session, "ask")
    strong = submit(client_for(alice), session, {**GOOD, "strength": 16})
    assert strong.status_code == 422
    assert answer_issues(strong) == [{"field": "strength", "message": "力量最多为 15。"}]


def test_the_packages_validator_refuses_per_field_and_for_the_whole_form(db, alice, tmp_path):
    session = sheet_session(tmp_path, alice, locale="fr")
    play(session, "ask")
    client = client_for(alice)
    strong = submit(client, session, {**GOOD, "strength": 16})
    assert strong.status_code == 422
    # The session's language reaches the validator with the package's translations.
    assert answer_issues(strong) == [{"field": "strength", "message": "La force est au plus 15."}]
    nobody = submit(client, session, {**GOOD, "name": "Nobody"})
    assert nobody.status_code == 422
    assert answer_issues(nobody) == [{"field": None, "message": "Nobody cannot play."}]
    assert Interaction.objects.get(session=session).status == "pending"
    assert [e["issues"] for e in events(session, "error.occurred")] == [
        answer_issues(strong),
        answer_issues(nobody),
    ]
    assert submit(client, session, GOOD).status_code == 200


def test_a_form_naming_an_undeclared_validation_fails_its_runtime(db, alice, tmp_path):
    session = sheet_session(tmp_path, alice)
    sheet = by_runtime(play(session, "undeclared"))["sheet"]
    assert sheet["status"] == "failed" and sheet["code"] == "form-invalid"
    reason = sheet["reason"]
    assert reason.startswith(
        "sheet (plugin sheet): a form at /effects/interactions/0/validation/name"
    )
    assert "'nowhere'" in reason and "(listed: point-buy)" in reason
    assert reason.endswith("[contributes.forms]")
    assert not Interaction.objects.filter(session=session).exists()


def test_an_interaction_id_used_before_in_the_session_fails_the_runtime(db, alice, tmp_path):
    session = sheet_session(tmp_path, alice)
    play(session, "ask")
    sheet = by_runtime(play(session, "ask"))["sheet"]
    assert sheet["status"] == "failed" and sheet["code"] == "form-invalid"
    assert "/effects/interactions/0/interactionId: 'sheet-1' is already used" in sheet["reason"]
    assert Interaction.objects.filter(session=session).count() == 1
    assert len(events(session, "notification.created")) == 1  # the failed run's notice is gone


def test_only_the_owner_or_staff_may_answer(db, alice, bob, charlie, tmp_path):
    session = sheet_session(tmp_path, alice)
    play(session, "ask")
    stranger = submit(client_for(charlie), session, GOOD)
    missing = submit(client_for(alice), session, GOOD, interaction_id="no-such-form")
    # Charlie learns nothing: the same 404 as for a form that does not exist.
    assert (stranger.status_code, stranger.json()["code"]) == (404, "not_found")
    assert (missing.status_code, missing.json()["code"]) == (404, "not_found")
    assert submit(client_for(None), session, GOOD).status_code == 401
    assert Interaction.objects.get(session=session).status == "pending"
    assert submit(client_for(bob), session, GOOD).status_code == 200


def test_plugin_text_on_the_play_page_is_escaped(db, alice, tmp_path):
    session = sheet_session(tmp_path, alice)
    play(session, "xss")
    page = client_for(alice).get(f"/sessions/{session.pk}/").content.decode()
    assert "&lt;script&gt;alert(&#x27;title&#x27;)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "&lt;b&gt;bold&lt;/b&gt;" in page
    assert "<script>alert(" not in page and "<img src=x" not in page
    fragment = client_for(alice).get(f"/sessions/{session.pk}/forms/")
    assert fragment.status_code == 200 and b"<script>alert(" not in fragment.content
    assert client_for(None).get(f"/sessions/{session.pk}/forms/").status_code == 302


ORACLE = """\
---
id: oracle
version: 1.0.0
description: An agent that asks the player with a form.
contributes:
  forms: [point-buy]
runtime:
  schedule: { stage: post-turn }
  agent:
    model: utility
    tools:
      builtin: [create-form, create-notification]
---
Ask the player for their character.
"""


def test_create_form_takes_a_notice_and_a_declared_validation(db, alice, tmp_path):
    folder = tmp_path / "oracle"
    (folder / "server").mkdir(parents=True)
    (folder / "PLUGIN.md").write_text(ORACLE, encoding="utf-8")
    (folder / "server" / "index.js").write_text(ENTRY, encoding="utf-8")
    index_folder(folder)
    world = make_world(owner=alice, plugins=["oracle"])
    form = {
        "title": "Your character",
        "notice": "The last sheet could not be used.",
        "validation": {"name": "point-buy"},
        "fields": [{"name": "strength", "label": "Strength", "type": "number", "max": 18}],
    }
    replies = [
        {
            "toolCalls": [
                {
                    "id": "a",
                    "name": "create-form",
                    "arguments": json.dumps({**form, "validation": {"name": "nowhere"}}),
                },
                {"id": "b", "name": "create-form", "arguments": json.dumps(form)},
                {"id": "c", "name": "create-notification", "arguments": '{"title": "Hark"}'},
            ]
        },
        {"content": "Asked."},
    ]
    with StandInModel(replies) as model:
        ModelSlot.objects.create(name="utility", base_url=model.base_url, model="stand-in")
        session = session_create(owner=alice, world=world)
        result = play(session, "I arrive.")
        tool_replies = [
            json.loads(m["content"]) for m in model.requests[1]["messages"] if m["role"] == "tool"
        ]
    assert by_runtime(result)["oracle"]["status"] == "succeeded"
    # The undeclared validator is refused to the model, which may ask again.
    assert "create-form at /validation/name" in tool_replies[0]["error"]
    assert "[contributes.forms]" in tool_replies[0]["error"]
    [row] = Interaction.objects.filter(session=session)
    assert row.interaction_id == tool_replies[1]["formId"] == f"oracle:{result['turnId']}:1"
    assert row.form["notice"] == "The last sheet could not be used."
    assert row.form["validation"] == {"name": "point-buy"}
    assert [n["title"] for n in events(session, "notification.created")] == ["Hark"]
    answer = submit(client_for(alice), session, {"strength": 16}, interaction_id=row.interaction_id)
    assert answer_issues(answer) == [{"field": "strength", "message": "Strength is at most 15."}]


def test_the_bundled_scene_setter_offers_its_form_on_the_first_turn(db, alice):
    index_bundled("storyteller", "scene-setter")
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["scene-setter"]))
    result = play(session, "I look around.")
    assert by_runtime(result)["scene-setter"]["status"] == "succeeded"
    [row] = Interaction.objects.filter(session=session)
    assert row.interaction_id == f"scene-form-{result['turnId']}"
    assert row.form["validation"] == {"name": "scene-form"}
    place = row.form["fields"][0]["default"]
    refused = submit(client_for(alice), session, {"place": " "}, interaction_id=row.interaction_id)
    assert answer_issues(refused) == [{"field": "place", "message": "Name the place."}]
    answer = submit(
        client_for(alice),
        session,
        {"place": place, "mood": "calm", "time": "dusk"},
        interaction_id=row.interaction_id,
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["narrativeText"]


def test_answering_the_scene_form_sets_the_scene(db, alice):
    """The answer goes back to the setup runtime that asked: its own code stores the scene, and
    the story does not read the hub's summary of the answer back as the player's deed."""
    index_bundled("storyteller", "scene-setter")
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["scene-setter"]))
    first = play(session, "I look around.")
    [row] = Interaction.objects.filter(session=session)
    opening = PluginData.objects.get(session=session, plugin_id="scene-setter", key="current")
    assert opening.value["place"] == row.form["fields"][0]["default"]
    chosen = {"place": "  The bell tower ", "mood": "eerie", "time": "night", "details": "Rope."}
    answer = submit(client_for(alice), session, chosen, interaction_id=row.interaction_id)
    assert answer.status_code == 200, answer.content
    result = answer.json()
    ran = by_runtime(result)["scene-setter"]
    assert (ran["status"], ran["activation"]) == ("succeeded", "form-answer"), ran
    scene = {"place": "The bell tower", "mood": "eerie", "time": "night", "details": "Rope."}
    assert ran["output"] == scene
    stored = PluginData.objects.get(session=session, plugin_id="scene-setter", key="current")
    assert (stored.namespace, stored.value) == ("scene", scene)
    story = result["narrativeText"]
    assert "[Player input]" not in story and "Adjust the opening scene" not in story
    assert story.startswith("You take it all in")
    # The answer asked for no new form, and the next ordinary turn leaves the scene alone.
    assert Interaction.objects.filter(session=session).count() == 1
    later = play(session, "I climb.")
    assert "scene-setter" not in by_runtime(later)
    assert later["turnId"] != first["turnId"]
    stored.refresh_from_db()
    assert stored.value == scene
