"""What a runtime returns, checked before the turn keeps it: its output against its schema, its
effects (notifications, forms) against the spec's shapes and the package's contributes.forms.

Each check answers a problem sentence (or None) that names the file, the path and the rule; the
caller turns it into the runtime's failure.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jsonschema import exceptions as schema_exceptions

from catalogue.manifest.types import Manifest, RuntimeManifest
from sessions.forms import form_normalise
from sessions.planner import PlannedRuntime
from sessions.schema_files import schema_validator
from sessions.turn_state import TurnState


def _schema_file(manifest: Manifest, runtime: RuntimeManifest, written: str) -> Path | None:
    """A path the manifest wrote: package-relative first, then relative to the runtime's file."""
    root = Path(manifest.path)
    for candidate in (root / written, (root / runtime.file).parent / written):
        if candidate.is_file():
            return candidate
    return None


def schema_problem(
    manifest: Manifest, runtime: RuntimeManifest, written: str, value: Any, *, what: str
) -> str | None:
    """None when value matches the schema file; else a sentence naming the file, path and rule."""
    path = _schema_file(manifest, runtime, written)
    if path is None:
        return f"{what} schema {written} of {runtime.qualified_id} cannot be found"
    try:
        validator = schema_validator(path)
    except (OSError, ValueError) as exc:
        return f"{what} schema {written} of {runtime.qualified_id} cannot be read: {exc}"
    error = schema_exceptions.best_match(validator.iter_errors(value))
    if error is None:
        return None
    pointer = "".join(f"/{p}" for p in error.absolute_path) or "/"
    relative = os.path.relpath(path, manifest.path)
    return f"{what} of {runtime.qualified_id} does not match {relative} at {pointer}: {error.message} [{error.validator}]"


def output_problem(manifest: Manifest, planned: PlannedRuntime, output: Any) -> str | None:
    written = planned.manifest.data.get("io", {}).get("output", {}).get("schema")
    if not written:
        return None
    return schema_problem(manifest, planned.manifest, str(written), output, what="output")


def effects_take(
    state: TurnState,
    manifest: Manifest,
    planned: PlannedRuntime,
    effects: Mapping[str, Any],
    *,
    owner: str,
) -> tuple[str, str] | None:
    """Hold a function's effects.notifications and effects.interactions for the commit, as
    owner's; (code, reason) when one cannot be shown, which fails the runtime.

    A form is checked against the same schema as create-form, its validation must be listed
    in contributes.forms, and its interactionId must be new in the session.
    """
    from agents.tools import notification_normalise, notification_problem

    where = f"{planned.runtime} (plugin {planned.package})"
    notices = effects.get("notifications") or []
    interactions = effects.get("interactions") or []
    if not isinstance(notices, list) or not isinstance(interactions, list):
        return (
            "effects-invalid",
            f"{where}: effects.notifications and effects.interactions are lists",
        )
    # Covel's {level, title, message} is taken as ours (agents.tools.notification_normalise).
    notices = [notification_normalise(n) for n in notices]
    for index, notice in enumerate(notices):
        problem = notification_problem(notice, base=f"/effects/notifications/{index}")
        if problem:
            return "notification-invalid", f"{where}: a notification {problem}"
    for index, entry in enumerate(interactions):
        base = f"/effects/interactions/{index}"
        if not isinstance(entry, dict) or entry.get("type") != "form":
            return (
                "form-invalid",
                f'{where}: an interaction at {base}/type: only type "form" is supported [type]',
            )
    forms, problem = forms_checked(
        state, manifest, [(f"/effects/interactions/{i}", e) for i, e in enumerate(interactions)]
    )
    if problem:
        return "form-invalid", f"{where}: a form {problem}"
    if forms:
        state.asks.forms.setdefault(owner, []).extend(forms)
    if notices:
        state.asks.notifications.setdefault(owner, []).extend(dict(n) for n in notices)
    return None


def forms_checked(
    state: TurnState, manifest: Manifest, entries: list[tuple[str, dict[str, Any]]]
) -> tuple[list[tuple[str, dict[str, Any]]], str | None]:
    """Forms (effects.interactions, interaction.request) checked against the create-form
    schema, the package's contributes.forms, and ids already used: (forms, problem)."""
    from agents.tools import form_problem

    taken = {i for forms in state.asks.forms.values() for i, _ in forms}
    forms: list[tuple[str, dict[str, Any]]] = []
    for base, entry in entries:
        problem = form_problem(
            entry,
            validators=manifest.contributes.get("forms") or (),
            interaction=True,
            base=base,
        )
        interaction_id = str(entry["interactionId"]) if not problem else ""
        if not problem and (
            interaction_id in taken or state.store.interaction_exists(interaction_id)
        ):
            problem = (
                f"at {base}/interactionId: {interaction_id!r} is already used in this "
                "session [uniqueInteractionId]"
            )
        if problem:
            return [], problem
        taken.add(interaction_id)
        asked = {k: v for k, v in entry.items() if k not in ("type", "interactionId")}
        forms.append((interaction_id, form_normalise(asked)))
    return forms, None
