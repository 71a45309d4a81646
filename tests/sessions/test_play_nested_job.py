"""ctx.recursiveCall inside a detached job: the background turn runs it through the same
executor, and the nested writes commit with the job's runtime."""

from __future__ import annotations

import pytest
import test_play_support as support
from test_play_support import by_runtime, index_folder, make_world, play, write_plugin

from sessions.models import PluginData, Turn
from sessions.services import session_create

file_database = support.file_database  # a shared fixture

pytestmark = pytest.mark.django_db(transaction=True)

LATER = """export default async function handler(ctx) {
  await ctx.pluginData.set("log", "caller", ctx.playerMessage);
  const nested = await ctx.recursiveCall({ manualTrigger: { runtimeId: "note", payload: { tag: "job" } } });
  return { outcome: "success", value: { depth: ctx.recursionDepth, nested } };
}
"""

NOTE = """export default async function handler(ctx) {
  const caller = await ctx.pluginData.get("log", "caller");
  await ctx.pluginData.set("log", "nested", { caller, tag: ctx.manualPayload.tag });
  return { outcome: "success", value: { depth: ctx.recursionDepth, heard: ctx.playerMessage } };
}
"""


def test_a_detached_job_makes_a_nested_call_that_commits_with_it(file_database, alice, tmp_path):
    from jobs.models import RuntimeJob
    from jobs.worker import job_execute

    later = {
        "schedule": {"stage": "post-turn", "detached": {"maxExecutionMs": 20000}},
        "function": {},
    }
    note = {"schedule": {"trigger": {"type": "manual"}}, "function": {}}
    folder = write_plugin(
        tmp_path, "slow", {}, runtimes={"later": (later, LATER), "note": (note, NOTE)}
    )
    index_folder(folder)
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["slow"]))
    result = play(session, "ring the bell")
    job = RuntimeJob.objects.get(job_id=by_runtime(result)["slow/later"]["jobId"])

    assert job_execute(job_pk=job.pk) == "succeeded"
    background = Turn.objects.get(session=session, kind="background")
    [later_result] = background.results
    assert later_result["output"] == {
        "depth": 0,
        "nested": {"outcome": "success", "value": {"depth": 1, "heard": "ring the bell"}},
    }
    assert [(n["runtimeId"], n["depth"], n["outcome"]) for n in later_result["nested"]] == [
        ("note", 1, "success")
    ]
    rows = {r.key: r.value for r in PluginData.objects.filter(session=session, namespace="log")}
    assert rows == {"caller": "ring the bell", "nested": {"caller": "ring the bell", "tag": "job"}}
