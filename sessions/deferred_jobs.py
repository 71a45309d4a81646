"""The turn's detached runtimes, deferred as jobs inside its commit (both or neither).

Each job carries the inputs the turn froze for it (and the event that woke it); the store
creates the job rows (jobs.services.job_defer for the database, the one function through which
detached runtimes leave a turn) and each id goes on its runtime's result.
"""

from __future__ import annotations

from catalogue.manifest.types import thaw
from sessions.runtime_context import trigger_event
from sessions.turn_state import TurnState
from sessions.turn_store import DeferredJob


def jobs_defer(state: TurnState) -> list[str]:
    """Defer every detached runtime the stages set aside; their jobs' public ids."""
    jobs = [
        DeferredJob(
            plugin=planned.package,
            runtime=planned.runtime,
            source_turn=str(state.turn.pk),
            inputs={
                "inputs": state.job_inputs.get(planned.runtime, {}),
                "playerMessage": state.request.message,
                "playerActions": list(state.request.actions),
                **(
                    {"triggerEvent": trigger_event(state, planned)}
                    if planned.activation == "event"
                    else {}
                ),
            },
            detached=thaw(planned.detached),
            package_version=state.installed[planned.package].version,
        )
        for planned in state.jobs
    ]
    ids = state.store.jobs_defer(jobs)
    for planned, job_id in zip(state.jobs, ids, strict=True):
        state.results[planned.runtime].job_id = job_id
    return ids
