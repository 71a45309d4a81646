"""emit-event as Covel's packages call it (ackness/covel packages/tools/src/builtin/emit-event.ts).

Covel's arguments are {topic, data}; data defaults to {}; a topic a run already emitted is
skipped; the success answer is text. The hub's earlier shape was {topic, payload}, and refused
`data` (additionalProperties: false): the first test fails on that shape.
"""

from __future__ import annotations

import json

from agent_helpers import Session, call, tool_messages


def test_emit_event_takes_covels_topic_and_data(toolbox):
    session = Session(toolbox)
    run, model = session.run(
        [
            {"toolCalls": [call("emit-event", {"topic": "toolbox.rang", "data": {"times": 2}})]},
            {"content": "Rang."},
        ]
    )
    assert run.status == "success", run.error
    assert session.emitted == [("toolbox.rang", {"times": 2})]
    assert tool_messages(model.requests[1]) == ['event "toolbox.rang" emitted']
    emit = next(t for t in model.requests[0]["tools"] if t["function"]["name"] == "emit-event")
    assert set(emit["function"]["parameters"]["properties"]) == {"topic", "data"}
    assert run.events[0]["data"] == {"times": 2}


def test_a_topic_emitted_twice_in_one_run_is_skipped_the_second_time(toolbox):
    session = Session(toolbox)
    again = {"topic": "toolbox.rang", "data": {"times": 1}}
    run, model = session.run(
        [
            {"toolCalls": [call("emit-event", {"topic": "toolbox.rang", "data": {"times": 2}})]},
            {"toolCalls": [call("emit-event", again, "second")]},
            {"content": "Rang."},
        ]
    )
    assert run.status == "success"
    assert session.emitted == [("toolbox.rang", {"times": 2})]
    assert tool_messages(model.requests[2])[-1] == (
        'event "toolbox.rang" already emitted this turn — skipped'
    )


def test_data_that_breaks_the_topic_schema_is_refused_and_nothing_is_emitted(toolbox):
    session = Session(toolbox)
    run, model = session.run(
        [
            {"toolCalls": [call("emit-event", {"topic": "toolbox.rang", "data": {"times": "x"}})]},
            {"content": "Gave up."},
        ]
    )
    answer = json.loads(tool_messages(model.requests[1])[0])
    assert answer["ok"] is False
    assert "the data of toolbox.rang does not match its schema at /times" in answer["error"]
    assert session.emitted == [] and run.events == []


def test_the_older_payload_name_is_still_read(toolbox):
    session = Session(toolbox)
    session.run(
        [
            {"toolCalls": [call("emit-event", {"topic": "toolbox.rang", "payload": {"times": 1}})]},
            {"content": "Rang."},
        ]
    )
    assert session.emitted == [("toolbox.rang", {"times": 1})]


PEAL_JS = """\
export default function makeRing({ tool, z, withEmittedEvents }) {
  return tool({
    name: "ring",
    description: "Ring the bell and tell the session.",
    parameters: z.object({ times: z.number().int().min(1).max(3) }),
    async execute({ times }) {
      return withEmittedEvents({ rang: times }, [{ topic: "toolbox.rang", data: { times } }]);
    },
  });
}
"""


def test_a_plugin_tools_emitted_event_carries_covels_data(tmp_path, settings):
    """A tool's withEmittedEvents entries are Covel's {topic, data}; the hub read `payload` and
    emitted the event with empty data."""
    from agent_helpers import load, write_toolbox

    settings.COVEL_BUNDLED_PLUGINS_DIR = tmp_path
    folder = write_toolbox(tmp_path)
    (folder / "tools" / "ring.js").write_text(PEAL_JS, encoding="utf-8")
    session = Session(load(folder))
    run, _ = session.run([{"toolCalls": [call("ring", {"times": 2})]}, {"content": "Rang."}])
    assert run.status == "success", run.error
    assert session.emitted == [("toolbox.rang", {"times": 2})]


SEEN_JS = """\
export default function makeRing({ tool, z }) {
  return tool({
    name: "ring",
    description: "Say what the run has emitted so far.",
    parameters: z.object({ times: z.number().int().min(1).max(3) }),
    async execute(_params, context) {
      return { topics: context.emittedEventTopics, pending: context.pendingProposals.length, slots: context.inputSlots };
    },
  });
}
"""


def test_a_plugin_tool_reads_the_runs_emitted_topics_and_inputs(tmp_path, settings):
    """Covel's PluginToolContext carries emittedEventTopics, pendingProposals and inputSlots."""
    from agent_helpers import load, write_toolbox

    settings.COVEL_BUNDLED_PLUGINS_DIR = tmp_path
    folder = write_toolbox(tmp_path)
    (folder / "tools" / "ring.js").write_text(SEEN_JS, encoding="utf-8")
    session = Session(load(folder))
    run, model = session.run(
        [
            {"toolCalls": [call("emit-event", {"topic": "toolbox.rang", "data": {"times": 1}})]},
            {"toolCalls": [call("ring", {"times": 1}, "r")]},
            {"content": "Done."},
        ],
        inputs={"clue": "a wet footprint"},
    )
    assert run.status == "success", run.error
    assert json.loads(tool_messages(model.requests[2])[-1]) == {
        "topics": ["toolbox.rang"],
        "pending": 0,
        "slots": {"clue": {"value": "a wet footprint"}},
    }
