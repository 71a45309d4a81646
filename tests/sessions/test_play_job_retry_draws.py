"""A detached job runs for its source turn: ctx.execution.sourceTurnId names that turn, and its
dice (ctx.random) are keyed by it, so a retried job draws the same numbers (spec: "a retry does
not draw again"). A manual background run has no source turn; its retries still draw alike."""

from __future__ import annotations

import re

from test_play_job_events import detached_session
from test_play_support import by_runtime, play

from jobs.models import RuntimeJob
from jobs.services import job_enqueue, job_retry
from jobs.worker import job_execute

ROLL_AND_FAIL = """export default async (ctx) => {
  const roll = ctx.random.int(1, 1000000);
  throw new Error(`rolled ${roll} for ${ctx.execution.sourceTurnId}`);
};
"""


def rolled(job: RuntimeJob) -> tuple[str, str]:
    job.refresh_from_db()
    assert job.state == "failed", job.error
    found = re.search(r"rolled (\d+) for (\S+)", job.error)
    assert found, job.error
    return found.group(1), found.group(2)


def test_a_retried_detached_job_draws_what_its_first_attempt_drew(db, alice, tmp_path):
    session = detached_session(alice, tmp_path, code=ROLL_AND_FAIL)
    first_turn = play(session, "roll")
    job = RuntimeJob.objects.get(job_id=by_runtime(first_turn)["scribe/later"]["jobId"])
    assert job_execute(job_pk=job.pk) == "failed"
    roll, source = rolled(job)
    assert source == first_turn["turnId"]  # the turn it runs for, not its own background turn

    retry = job_retry(job=job, actor=alice)
    assert job_execute(job_pk=retry.pk) == "failed"
    assert rolled(retry) == (roll, source)
    again = job_retry(job=retry, actor=alice)  # a retry of the retry still keys by the turn
    assert job_execute(job_pk=again.pk) == "failed"
    assert rolled(again) == (roll, source)

    # Another turn's job is another draw: the seed is the turn's, not a constant.
    second_turn = play(session, "roll again")
    other = RuntimeJob.objects.get(job_id=by_runtime(second_turn)["scribe/later"]["jobId"])
    assert job_execute(job_pk=other.pk) == "failed"
    other_roll, other_source = rolled(other)
    assert other_source == second_turn["turnId"] and other_roll != roll


def manual_run(session) -> RuntimeJob:
    """A manual background run of scribe/later, as the API queues one: no source turn."""
    return job_enqueue(
        session_id=session.pk,
        plugin_id="scribe",
        runtime_id="scribe/later",
        inputs={"inputs": {}, "playerMessage": ""},
    )


def test_a_manual_background_run_has_no_source_turn_and_its_retry_draws_alike(db, alice, tmp_path):
    session = detached_session(alice, tmp_path, code=ROLL_AND_FAIL)
    first = manual_run(session)
    assert job_execute(job_pk=first.pk) == "failed"
    roll, source = rolled(first)
    assert source == "null"
    retry = job_retry(job=first, actor=alice)
    assert job_execute(job_pk=retry.pk) == "failed"
    assert rolled(retry) == (roll, "null")
    fresh = manual_run(session)
    assert job_execute(job_pk=fresh.pk) == "failed"
    assert rolled(fresh)[0] != roll  # a new run, not a retry, draws anew
