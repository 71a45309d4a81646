"""The turn's detached runtimes, deferred as jobs inside its commit (both or neither).

jobs.services.job_defer is the one function through which detached runtimes leave the turn;
each job carries the inputs the turn froze for it, and its id goes on the runtime's result.
"""

from __future__ import annotations

from catalogue.manifest.types import thaw
from sessions.models import Session
from sessions.runtime_context import trigger_event
from sessions.turn_state import TurnState


def jobs_defer(state: TurnState, session: Session) -> list[str]:
    """One RuntimeJob per detached runtime the stages deferred; their public ids."""
    if not state.jobs:
        return []
    from jobs.services import job_defer

    ids = []
    for planned in state.jobs:
        job = job_defer(
            session_id=session.pk,
            plugin_id=planned.package,
            runtime_id=planned.runtime,
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
        state.results[planned.runtime].job_id = str(job.job_id)
        ids.append(str(job.job_id))
    return ids
