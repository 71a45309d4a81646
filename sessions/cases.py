"""Offline runtime cases (`tests/runtime-cases.json`) in mock mode.

Each case is one turn of a throwaway, in-memory session that holds the package under test and
what the resolver adds for it (its required providers and the core packages). The model is the
stand-in (agents.standin) over real HTTP on loopback, replaying the case's `llmResponses` in
order; plugin code runs in the real Node plugin host; plugin data lives in a
sessions.operations.TurnOverlay over an in-memory store and commits at the end of the turn.

In mock mode:
- agent runtimes of the package under test run against the script; agent runtimes of other
  packages are skipped (`mock-skipped`), so the script only has to cover the package's own;
- function runtimes of every active package run for real (the narrator writes the story);
- detached runtimes run inline, since there is no worker: the case sees their result;
- guards are not run (the plugin host has no guard method yet): the runtime runs;
- RPC actions (`rpc` in a case, or a message that is a slash command) are not run: the spec's
  notice `Unsupported rpc: <plugin>/<action>. Verify with the server.` is printed, not an error.

It lives in sessions (it was agents/cases.py): it drives the session's resolver, planner, input
binding and plugin-data overlay around the agent runtime, and agents sit below sessions. One
piece, past 800 lines, because it is one turn's walk, resolve -> plan -> run each stage ->
commit, mirrored from sessions/turns.py without a database: split, a reader would lose the
order of the turn it imitates.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.gateway import Endpoint
from agents.runtime import (
    AgentRuntimeContext,
    OverlayCallbacks,
    OverlayData,
    agent_slot,
    run_agent_runtime,
)
from agents.standin import StandInModel
from agents.tools import event_directory, service_providers
from catalogue.manifest.types import Manifest, RuntimeManifest, thaw

CASES_FILE = "tests/runtime-cases.json"
# The time a mock run stamps on what it writes (session lore's createdAt/updatedAt): one fixed
# instant, so a case's report is the same on every run.
MOCK_NOW = "2000-01-01T00:00:00+00:00"
CASE_FIELDS = {
    "name",
    "runtimeId",
    "message",
    "payload",
    "userSettings",
    "llmResponses",
    "expect",
    "rpc",
    "description",
    "phase",
}
EXPECT_FIELDS = {"runtimeResults", "pluginData", "events"}
# A package ID is also the name of its folder (the manifest's `id` must equal it).
PACKAGE_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
STATUSES = {"success", "failed", "skipped"}
DATA_STATUSES = {"present", "absent"}


class CaseFileError(Exception):
    """The cases file or the arguments cannot be used (exit 2). The message names file and path."""


def _problem(file: str, path: str, rule: str) -> CaseFileError:
    return CaseFileError(f"{file}:{path or '/'} {rule}")


# ----------------------------------------------------------------------------- reading cases


def _check_list(
    value: Any,
    file: str,
    path: str,
    item_fields: dict[str, type | tuple[type, ...]],
    required: Sequence[str],
) -> None:
    if not isinstance(value, list):
        raise _problem(file, path, "must be a list")
    for index, item in enumerate(value):
        where = f"{path}/{index}"
        if not isinstance(item, dict):
            raise _problem(file, where, "must be an object")
        for name in required:
            if name not in item:
                raise _problem(file, f"{where}/{name}", "is required")
        for name, kind in item_fields.items():
            if name in item and not isinstance(item[name], kind):
                raise _problem(file, f"{where}/{name}", f"must be {_kind_name(kind)}")
        unknown = sorted(set(item) - set(item_fields))
        if unknown:
            raise _problem(file, f"{where}/{unknown[0]}", "is not a known field")


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {
        str: "a string",
        list: "a list",
        dict: "an object",
        bool: "a boolean",
        int: "an integer",
    }
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def read_cases(path: Path) -> list[dict[str, Any]]:
    """The cases of a package, checked field by field; raises CaseFileError naming file and path."""
    file = str(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CaseFileError(f"{file}: no runtime cases file (write {CASES_FILE})") from None
    except ValueError as exc:
        raise CaseFileError(f"{file}: is not valid JSON: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("cases"), list):
        raise _problem(file, "/cases", "is required and must be a list")
    seen: set[str] = set()
    for index, case in enumerate(document["cases"]):
        where = f"/cases/{index}"
        if not isinstance(case, dict):
            raise _problem(file, where, "must be an object")
        unknown = sorted(set(case) - CASE_FIELDS)
        if unknown:
            raise _problem(file, f"{where}/{unknown[0]}", "is not a known field")
        name = case.get("name")
        if not isinstance(name, str) or not name:
            raise _problem(file, f"{where}/name", "is required and must be a non-empty string")
        if name in seen:
            raise _problem(
                file, f"{where}/name", f"repeats the case name {name!r}; names must be unique"
            )
        seen.add(name)
        for key, kind in (
            ("message", str),
            ("runtimeId", str),
            ("userSettings", dict),
            ("phase", str),
        ):
            if key in case and not isinstance(case[key], kind):
                raise _problem(file, f"{where}/{key}", f"must be {_kind_name(kind)}")
        if case.get("phase", "playing") not in ("setup", "playing"):
            raise _problem(file, f"{where}/phase", "must be setup or playing")
        _check_list(
            case.get("llmResponses", []),
            file,
            f"{where}/llmResponses",
            {
                "content": (str, type(None)),
                "finishReason": (str, type(None)),
                "toolCalls": list,
                "status": int,
                "delayMs": int,
                "firstTokenDelayMs": int,
                "chunkDelayMs": int,
                "stallMs": int,
            },
            [],
        )
        for r_index, reply in enumerate(case.get("llmResponses", [])):
            _check_list(
                reply.get("toolCalls") or [],
                file,
                f"{where}/llmResponses/{r_index}/toolCalls",
                {"id": str, "name": str, "arguments": str},
                ["name"],
            )
        rpc = case.get("rpc")
        if rpc is not None:
            _check_list(
                rpc if isinstance(rpc, list) else [rpc],
                file,
                f"{where}/rpc",
                {"action": str, "payload": object},
                ["action"],
            )
        expect = case.get("expect", {})
        if not isinstance(expect, dict):
            raise _problem(file, f"{where}/expect", "must be an object")
        unknown = sorted(set(expect) - EXPECT_FIELDS)
        if unknown:
            raise _problem(file, f"{where}/expect/{unknown[0]}", "is not a known field")
        _check_list(
            expect.get("runtimeResults", []),
            file,
            f"{where}/expect/runtimeResults",
            {"runtimeId": str, "status": str, "errorIncludes": str},
            ["runtimeId"],
        )
        for r_index, item in enumerate(expect.get("runtimeResults", [])):
            if "status" in item and item["status"] not in STATUSES:
                raise _problem(
                    file,
                    f"{where}/expect/runtimeResults/{r_index}/status",
                    f"must be one of {', '.join(sorted(STATUSES))}",
                )
        _check_list(
            expect.get("pluginData", []),
            file,
            f"{where}/expect/pluginData",
            {
                "pluginId": str,
                "namespace": str,
                "key": str,
                "field": str,
                "status": str,
                "equals": object,
            },
            ["namespace", "key"],
        )
        for d_index, item in enumerate(expect.get("pluginData", [])):
            if "status" in item and item["status"] not in DATA_STATUSES:
                raise _problem(
                    file,
                    f"{where}/expect/pluginData/{d_index}/status",
                    f"must be one of {', '.join(sorted(DATA_STATUSES))}",
                )
        _check_list(
            expect.get("events", []),
            file,
            f"{where}/expect/events",
            {"topic": str, "payload": dict, "count": int},
            ["topic"],
        )
    return document["cases"]


# ----------------------------------------------------------------------------- the session


def _packages(
    under_test: Manifest, host_version: str, search: Sequence[Path]
) -> dict[str, Manifest]:
    """Installed packages of the throwaway session: the one under test wins its ID."""
    from catalogue.manifest.loader import load_package

    found: dict[str, Manifest] = {}
    for folder in search:
        if not folder.is_dir():
            continue
        for child in sorted(folder.iterdir()):
            if (
                not (child / "PLUGIN.md").is_file()
                or child.resolve() == Path(under_test.path).resolve()
            ):
                continue
            result = load_package(child, host_version=host_version)
            if result.ok and result.manifest is not None:
                found.setdefault(result.manifest.id, result.manifest)
    found[under_test.id] = under_test
    return found


def _setting_defaults(manifest: Manifest) -> dict[str, Any]:
    return {
        str(s["key"]): s.get("default")
        for s in thaw(manifest.contributes.get("settings") or ())
        if "default" in s
    }


@dataclass
class Outcome:
    runtime: str
    package: str
    kind: str
    status: str
    code: str = ""
    error: str = ""
    output: Any = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    concealed: bool = False

    def as_dict(self) -> dict[str, Any]:
        found = {
            "runtimeId": self.runtime,
            "package": self.package,
            "kind": self.kind,
            "status": self.status,
            "code": self.code or None,
            "error": self.error or None,
            # A concealed runtime's output never leaves the run, offline included.
            "output": None if self.concealed else self.output,
        }
        if self.kind == "agent":
            found["toolCalls"] = self.tool_calls
            found["warnings"] = self.warnings
        return found


@dataclass
class MockTurn:
    """One case's turn: the active packages, the overlay, and what happened."""

    under_test: Manifest
    active: list[Manifest]
    endpoint: Endpoint
    message: str
    payload: Any
    user_settings: Mapping[str, Any]
    target: str | None
    phase: str
    store: dict[tuple[str, str, str], Any] = field(default_factory=dict)
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    llm_calls: list[dict[str, Any]] = field(default_factory=list)
    narrative: str = ""
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        from sessions.operations import MISSING

        self.missing = MISSING
        self.detached: list[Any] = []  # planned detached runtimes: they run after the commit
        self.exports: dict[tuple[str, str], Any] = {}  # (plugin, recordAs) -> committed export
        self.overlay = self.new_overlay()
        self.events_directory = event_directory(self.active)
        self.services = service_providers(self.active)
        self.by_id = {m.id: m for m in self.active}

    # ---------------------------------------------------------------- helpers

    def new_overlay(self) -> Any:
        from sessions.operations import TurnOverlay, datasets_of

        return TurnOverlay(
            load=lambda p, n, k: self.store.get((p, n, k), self.missing),
            lister=lambda p, n: {
                k: v for (pp, nn, k), v in self.store.items() if (pp, nn) == (p, n)
            },
            datasets={m.id: datasets_of(m) for m in self.active},
        )

    def settings_for(self, manifest: Manifest) -> dict[str, Any]:
        values = _setting_defaults(manifest)
        if manifest.id == self.under_test.id:
            values.update(self.user_settings)
        return values

    def segments(
        self, manifest: Manifest, runtime: RuntimeManifest, rid: str
    ) -> list[dict[str, Any]]:
        """The static and prompt.segment@1 segments this agent reads, as in a real turn; a
        failing provider is a note of the run (sessions.extensions)."""
        from sessions import extensions

        failures: list[dict[str, Any]] = []
        found = extensions.static_segments(self.active) + extensions.prompt_segments(
            session=None,
            active=self.active,
            turn_id="mock-turn-1",
            player_message=self.message,
            world={"id": "mock-world", "name": "Mock world", "characters": []},
            failures=failures,
            callbacks_for=lambda plugin: self.callbacks(plugin, rid),
        )
        for failure in failures:
            self.notes.append(
                f"{failure['point']} {failure['plugin']}/{failure['extension']} was skipped "
                f"[{failure['code']}]: {failure['message']}"
            )
        output = (runtime.data.get("io") or {}).get("output") or {}
        return extensions.segments_for(
            found,
            package=manifest.id,
            story=runtime.visibility == "story",
            contract=output.get("contract"),
        )

    def callbacks(self, plugin: str, runtime: str) -> OverlayCallbacks:
        return OverlayCallbacks(
            overlay=self.overlay,
            package=plugin,
            runtime=runtime,
            session={
                "id": "mock-session",
                "phase": self.phase,
                "turnCount": 0,
                "locale": "en",
                "worldId": "mock-world",
            },
            on_emit=lambda topic, payload: self.emitted(runtime, topic, payload),
        )

    def emitted(self, runtime: str, topic: str, payload: Mapping[str, Any]) -> None:
        self.events.append({"topic": topic, "payload": dict(payload), "runtimeId": runtime})

    def finish(self, outcome: Outcome) -> None:
        self.outcomes[outcome.runtime] = outcome
        self.order.append(outcome.runtime)
        self.overlay.complete(outcome.runtime, succeeded=outcome.status == "success")
        if outcome.status == "success":
            self.outputs[outcome.runtime] = outcome.output
            runtime = self._runtime(outcome.runtime)
            if runtime is not None and runtime.visibility == "story" and not self.narrative:
                text = (
                    outcome.output.get("narrativeOutput")
                    if isinstance(outcome.output, dict)
                    else None
                )
                self.narrative = text if isinstance(text, str) else ""

    def _runtime(self, qualified: str) -> RuntimeManifest | None:
        for manifest in self.active:
            for runtime in manifest.runtimes:
                if runtime.qualified_id == qualified:
                    return runtime
        return None

    # ---------------------------------------------------------------- inputs

    def inputs(self, manifest: Manifest, runtime: RuntimeManifest) -> tuple[dict[str, Any], str]:
        """The runtime's bound inputs ({name: value}), or why a required one is missing.

        The rule is the turn executor's own (sessions.inputs.bind_inputs); only the sources differ:
        the mock turn's outputs, its in-memory exports and its empty action list.
        """
        from sessions.inputs import bind_inputs, staged_operations

        binding = bind_inputs(
            manifest=manifest,
            runtime=runtime,
            active=self.active,
            outputs=self.outputs,
            committed=self.exports,
            digest={"playerMessage": self.message, "narrativeText": self.narrative, "actions": []},
            operations=staged_operations(self.overlay, manifest.id),
        )
        for producer in binding.dependencies:
            self.overlay.record_dependency(reader=runtime.qualified_id, source=producer)
        return binding.values, binding.problem

    # ---------------------------------------------------------------- running

    def run(self) -> None:
        from sessions.planner import STAGES, plan_turn

        manual = {self.target} if self.target else set()
        done: set[str] = set()
        for stage_name in [*STAGES, "manual"]:
            plan = plan_turn(
                manifests=self.active,
                phase=self.phase,
                turn=1,
                emitted_topics={e["topic"] for e in self.events},
                manual=manual,
            )
            stage = next((s for s in plan.stages if s.stage == stage_name), None)
            if stage is None:
                continue
            for planned in stage.runtimes():
                if planned.runtime in done:
                    continue
                done.add(planned.runtime)
                statuses = {
                    rid: ("succeeded" if o.status == "success" else o.status)
                    for rid, o in self.outcomes.items()
                }
                if planned.is_detached:
                    # No worker in mock mode: the job runs right after this turn commits.
                    self.detached.append(planned)
                    continue
                skip = plan.gate(planned.runtime, statuses)
                kind = planned.manifest.kind
                if skip is not None:
                    self.finish(
                        Outcome(
                            planned.runtime,
                            planned.package,
                            kind,
                            "skipped",
                            skip.code,
                            skip.reason,
                        )
                    )
                    continue
                self.run_one(self.by_id[planned.package], planned.manifest)
        if self.target and self.target not in self.outcomes:
            self.notes.append(f"runtime {self.target} was not scheduled in this turn")

    def run_one(self, manifest: Manifest, runtime: RuntimeManifest) -> None:
        rid = runtime.qualified_id
        if runtime.is_function:
            inputs, missing = self.inputs(manifest, runtime)
            if missing:
                self.finish(
                    Outcome(rid, manifest.id, "function", "skipped", "input-missing", missing)
                )
                return
            self.finish(self.run_function(manifest, runtime, inputs))
            return
        not_scripted = None
        if manifest.id != self.under_test.id:
            not_scripted = f"{rid} is an agent runtime of another package; mock mode scripts only {self.under_test.id}"
        elif self.target and rid != self.target and runtime.id != self.target:
            not_scripted = f"the case targets {self.target}, not {rid}"
        if not_scripted is not None:
            self.finish(Outcome(rid, manifest.id, "agent", "skipped", "mock-skipped", not_scripted))
            return
        inputs, missing = self.inputs(manifest, runtime)
        if missing:
            self.finish(Outcome(rid, manifest.id, "agent", "skipped", "input-missing", missing))
            return
        settings = self.settings_for(manifest)
        from sessions.operations import proposal_ops

        context = AgentRuntimeContext(
            data=OverlayData(overlay=self.overlay, runtime=rid),
            callbacks_for=lambda plugin: self.callbacks(plugin, rid),
            session_id="mock-session",
            turn_id="mock-turn-1",
            player_message=self.message,
            story_text=self.narrative or None,
            inputs=inputs,
            payload=self.payload if self.target in (rid, runtime.id) else None,
            variables={"settings": settings, "world": {"id": "mock-world", "name": "Mock world"}},
            segments=self.segments(manifest, runtime, rid),
            user_settings=settings,
            world={"id": "mock-world", "name": "Mock world", "characters": []},
            seed=f"mock-turn-1:{rid}",
            events=self.events_directory,
            services=self.services,
            emit=lambda topic, payload: self.emitted(rid, topic, payload),
            tool_context={"turnNumber": 1, "logicalTurn": 1},
            proposal_ops=proposal_ops,
            stage_proposals=lambda plugin, proposals: self.stage_tool_proposals(
                rid, plugin, proposals
            ),
        )
        endpoint = Endpoint(
            slot=agent_slot(runtime, settings),
            base_url=self.endpoint.base_url,
            model=self.endpoint.model,
        )
        run = run_agent_runtime(
            manifest=manifest, runtime=runtime, context=context, endpoint=endpoint
        )
        for call in run.llm_calls:
            self.llm_calls.append({"runtimeId": rid, **call})
        concealed = bool((runtime.data.get("io") or {}).get("concealed", False))
        if run.status == "success":
            outcome = Outcome(rid, manifest.id, "agent", "success", output=run.output)
        else:
            outcome = Outcome(
                rid, manifest.id, "agent", "failed", run.code or "agent-failed", run.error or ""
            )
        outcome.tool_calls, outcome.warnings, outcome.concealed = (
            run.tool_calls,
            run.warnings,
            concealed,
        )
        self.finish(outcome)

    def stage_tool_proposals(
        self, rid: str, plugin: str, proposals: Sequence[Mapping[str, Any]]
    ) -> str | None:
        """An agent tool call's proposals, checked as a turn checks them: all staged, or none
        and the refusal for the model."""
        from sessions.errors import WriteRefused
        from sessions.proposals import ProposalRefused, lore_writes, proposal_batch

        mark = len(self.overlay.writes)
        try:
            batch = proposal_batch(list(proposals), package=plugin, runtime=rid)
            lore = lore_writes(
                self.overlay, runtime=rid, plugin=plugin, lore=batch.lore, now=MOCK_NOW
            )
            writes = [(plugin, *w) for w in [*batch.writes, *lore]]
            for owner, namespace, key, ops in writes + self.session_records(rid, plugin, batch):
                self.overlay.stage(runtime=rid, plugin=owner, namespace=namespace, key=key, ops=ops)
        except (ProposalRefused, WriteRefused) as exc:
            self.overlay.discard_since(mark)
            return str(exc)
        for topic, payload in batch.events:
            self.emitted(rid, topic, payload)
        return None

    def session_records(self, rid: str, plugin: str, batch: Any) -> list[Any]:
        """The session records (characters, state, working memory) a run's proposals write, as
        a turn stages them, under sessions.proposals.SESSION_DATA; the mock world has no
        characters. Story text, forms and UI blocks of proposals are not shown in mock mode."""
        from sessions.proposals import session_writes

        return session_writes(
            self.overlay,
            batch,
            runtime=rid,
            package=plugin,
            world_characters=[],
            turn_id="mock-turn-1",
            now=MOCK_NOW,
        )

    def run_function(
        self, manifest: Manifest, runtime: RuntimeManifest, inputs: dict[str, Any]
    ) -> Outcome:
        from pluginhost.errors import PluginHostError
        from pluginhost.services import plugin_function_call
        from sessions.errors import OperationError
        from sessions.proposals import (
            ProposalRefused,
            effects_proposals,
            lore_writes,
            proposal_batch,
        )

        rid = runtime.qualified_id
        try:
            answer = plugin_function_call(
                manifest=manifest,
                runtime=runtime.id,
                callbacks=self.callbacks(manifest.id, rid),
                context={
                    "sessionId": "mock-session",
                    "turnId": "mock-turn-1",
                    "runtimeId": runtime.id,
                    "inputs": {k: {"value": v} for k, v in inputs.items()},
                    "playerMessage": self.message,
                    "playerActions": [],
                    "manualPayload": self.payload if self.target in (rid, runtime.id) else None,
                    "world": {"id": "mock-world", "name": "Mock world", "characters": []},
                    "userSettings": self.settings_for(manifest),
                    "locale": "en",
                    "seed": f"mock-turn-1:{rid}",
                    "logicalTurn": 1,
                    "turnNumber": 1,
                },
            )
        except PluginHostError as exc:
            return Outcome(rid, manifest.id, "function", "failed", exc.code, exc.message)
        value = answer.result if isinstance(answer.result, dict) else {}
        for event in list(answer.emitted_events) + list(
            (value.get("effects") or {}).get("events") or []
        ):
            if isinstance(event, dict) and event.get("topic"):
                self.emitted(rid, str(event["topic"]), event.get("payload") or {})
        outcome = value.get("outcome", "success")
        if outcome == "failed":
            return Outcome(
                rid,
                manifest.id,
                "function",
                "failed",
                "runtime-failed",
                str(value.get("error") or ""),
            )
        if outcome == "skipped":
            return Outcome(
                rid,
                manifest.id,
                "function",
                "skipped",
                "runtime-skipped",
                str(value.get("reason") or ""),
            )
        output = value.get("value")
        problem = _output_problem(manifest, runtime, output)
        if problem:
            return Outcome(rid, manifest.id, "function", "failed", "output-invalid", problem)
        writes: list[tuple[str, str, list[Any]]] = []
        for op in answer.operations:
            kind = op.get("kind")
            if kind == "set":
                ops = (
                    [{"op": "delete"}]
                    if op.get("value") is None
                    else [{"op": "set", "value": op["value"]}]
                )
            elif kind == "update":
                ops = list(op.get("ops") or [])
            elif kind == "delete":
                ops = [{"op": "delete"}]
            else:
                continue
            writes.append((str(op["namespace"]), str(op["key"]), ops))
        # The proposals and effects.pluginData, checked as a turn checks them (sessions.proposals).
        effects = value.get("effects") if isinstance(value.get("effects"), dict) else {}
        try:
            batch = proposal_batch(
                [*answer.proposals, *effects_proposals(effects.get("pluginData"))],
                package=manifest.id,
                runtime=rid,
            )
        except ProposalRefused as exc:
            return Outcome(rid, manifest.id, "function", "failed", exc.code, exc.message)
        writes.extend(batch.writes)
        writes.extend(
            lore_writes(
                self.overlay, runtime=rid, plugin=manifest.id, lore=batch.lore, now=MOCK_NOW
            )
        )
        try:
            records = self.session_records(rid, manifest.id, batch)
        except ProposalRefused as exc:
            return Outcome(rid, manifest.id, "function", "failed", exc.code, exc.message)
        for topic, payload in batch.events:
            self.emitted(rid, topic, payload)
        for owner, namespace, key, ops in [(manifest.id, *w) for w in writes] + records:
            try:
                self.overlay.stage(runtime=rid, plugin=owner, namespace=namespace, key=key, ops=ops)
            except (OperationError, ValueError) as exc:
                return Outcome(rid, manifest.id, "function", "failed", "write-refused", str(exc))
        return Outcome(rid, manifest.id, "function", "success", output=output)

    def run_jobs(self) -> None:
        """The detached runtimes, in plan order, against the committed data and exports."""
        from sessions.planner import UPSTREAM_FAILED

        jobs, self.detached = self.detached, []
        for planned in jobs:
            # Each job commits on its own, as a worker's job does.
            self.overlay = self.new_overlay()
            failed = [
                g.upstream
                for g in planned.gates
                if g.kind == "needs"
                and (
                    self.outcomes.get(g.upstream) is None
                    or self.outcomes[g.upstream].status != "success"
                )
            ]
            if failed:
                self.finish(
                    Outcome(
                        planned.runtime,
                        planned.package,
                        planned.manifest.kind,
                        "skipped",
                        UPSTREAM_FAILED,
                        f"{planned.runtime} needs {failed[0]}, which did not succeed",
                    )
                )
                continue
            self.run_one(self.by_id[planned.package], planned.manifest)
            self.commit()

    def commit(self) -> None:
        story = [
            rid
            for rid in self.order
            if (rt := self._runtime(rid)) is not None and rt.visibility == "story"
        ]
        result = self.overlay.commit(story=story)
        kept = set(result.kept)
        for rid in kept:
            runtime = self._runtime(rid)
            record_as = (
                ((runtime.data.get("io") or {}).get("output") or {}).get("recordAs")
                if runtime
                else None
            )
            if record_as and self.outcomes[rid].status == "success":
                self.exports[(self.outcomes[rid].package, str(record_as))] = self.outputs.get(rid)
        for dropped in result.dropped:
            outcome = self.outcomes.get(dropped.runtime)
            if outcome is not None and outcome.runtime not in story:
                outcome.status, outcome.code, outcome.error = (
                    "failed",
                    dropped.code,
                    dropped.message,
                )
        for where, value in result.values.items():
            if value is self.missing:
                self.store.pop(where, None)
            else:
                self.store[where] = value


def _output_problem(manifest: Manifest, runtime: RuntimeManifest, output: Any) -> str | None:
    from agents.runtime import _load_schema, _schema_error

    schema, problem = _load_schema(manifest, runtime)
    if problem:
        return problem
    if schema is None:
        return None
    mismatch = _schema_error(schema, output)
    return (
        f"output of {runtime.qualified_id} does not match io.output.schema {mismatch}"
        if mismatch
        else None
    )


# ----------------------------------------------------------------------------- checks


def _check(case: Mapping[str, Any], turn: MockTurn) -> list[str]:
    failures: list[str] = []
    expect = case.get("expect") or {}
    for item in expect.get("runtimeResults", []):
        wanted = item["runtimeId"]
        found = turn.outcomes.get(wanted) or next(
            (
                o
                for o in turn.outcomes.values()
                if o.runtime.split("/")[-1] == wanted and o.package == turn.under_test.id
            ),
            None,
        )
        if found is None:
            failures.append(
                f"runtime {wanted} did not run (ran: {', '.join(turn.order) or 'nothing'})"
            )
            continue
        status = item.get("status", "success")
        if found.status != status:
            why = f": {found.error} [{found.code}]" if found.error or found.code else ""
            failures.append(f"runtime {wanted} ended {found.status}, expected {status}{why}")
        if "errorIncludes" in item and item["errorIncludes"] not in f"{found.error} [{found.code}]":
            failures.append(
                f"runtime {wanted}'s error {found.error!r} does not include {item['errorIncludes']!r}"
            )
    for item in expect.get("pluginData", []):
        plugin = item.get("pluginId", turn.under_test.id)
        where = f"{plugin}/{item['namespace']}/{item['key']}"
        value = turn.store.get((plugin, item["namespace"], item["key"]), turn.missing)
        status = item.get("status", "present")
        if status == "absent":
            if value is not turn.missing and (
                "field" not in item or (isinstance(value, dict) and item["field"] in value)
            ):
                failures.append(
                    f"plugin data {where}{'.' + item['field'] if 'field' in item else ''} exists, expected absent"
                )
            continue
        if value is turn.missing:
            failures.append(f"plugin data {where} was not saved")
            continue
        if "field" in item:
            if not isinstance(value, dict) or item["field"] not in value:
                failures.append(f"plugin data {where} has no field {item['field']}")
                continue
            value = value[item["field"]]
        if "equals" in item and value != item["equals"]:
            failures.append(
                f"plugin data {where} is {json.dumps(value)}, expected {json.dumps(item['equals'])}"
            )
    for item in expect.get("events", []):
        matching = [
            e
            for e in turn.events
            if e["topic"] == item["topic"]
            and all(e["payload"].get(k) == v for k, v in (item.get("payload") or {}).items())
        ]
        count = item.get("count")
        if count is None and not matching:
            failures.append(
                f"no event {item['topic']} was emitted"
                + (" with that payload" if item.get("payload") else "")
            )
        elif count is not None and len(matching) != count:
            failures.append(
                f"event {item['topic']} was emitted {len(matching)} times, expected {count}"
            )
    return failures


# ----------------------------------------------------------------------------- the runner


@dataclass
class CasesReport:
    status: str
    plugin_id: str
    cases: list[dict[str, Any]]
    notices: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "mode": "mock",
            "pluginId": self.plugin_id,
            "cases": self.cases,
        }

    @property
    def exit_code(self) -> int:
        return 0 if self.status == "ok" else 1


def _command_action(message: str, manifest: Manifest) -> str | None:
    """The RPC action a slash-command message invokes, or None for a player action."""
    message = message.strip()
    if not message.startswith("/") or len(message) < 2:
        return None
    word = message[1:].split(maxsplit=1)[0]
    for command in thaw(manifest.contributes.get("commands") or ()):
        if word == command["name"] or word in (command.get("aliases") or ()):
            return str(command["action"])
    return None


def _rpc_actions(case: Mapping[str, Any], manifest: Manifest) -> list[str]:
    rpc = case.get("rpc")
    actions = [str(r["action"]) for r in (rpc if isinstance(rpc, list) else [rpc] if rpc else [])]
    command = _command_action(str(case.get("message") or ""), manifest)
    return [*actions, command] if command else actions


def installed_plugin_folders() -> list[Path]:
    """The configured plugin folders in the catalogue's precedence: bundled, user, community."""
    from django.conf import settings

    return [
        Path(settings.COVEL_BUNDLED_PLUGINS_DIR),
        Path(settings.COVEL_USER_PLUGINS_DIR),
        *[Path(p) for p in settings.COVEL_COMMUNITY_PLUGIN_DIRS],
    ]


def plugin_folder_resolve(*, plugin: str, folders: Sequence[Path] | None = None) -> Path:
    """The package folder test_runtime runs: an installed plugin's by its id (the spec's
    `test:runtime -- notebook`), or a folder path as given.

    An argument with a path separator, or naming a folder that holds a PLUGIN.md, is a path.
    Raises CaseFileError when an id names no installed package.
    """
    given = Path(plugin).expanduser()
    if "/" in plugin or os.sep in plugin or plugin.startswith((".", "~")) or given.is_absolute():
        return given
    if (given / "PLUGIN.md").is_file() or not PACKAGE_ID.match(plugin):
        return given  # run_cases names what is wrong with a path
    searched = list(folders) if folders is not None else installed_plugin_folders()
    for folder in searched:
        if (folder / plugin / "PLUGIN.md").is_file():
            return folder / plugin
    where = ", ".join(str(f) for f in searched)
    raise CaseFileError(
        f"{plugin}: no installed plugin with this id (no {plugin}/PLUGIN.md in {where}) "
        "and no package folder of that name here"
    )


def run_cases(
    plugin_path: str | os.PathLike[str],
    *,
    case_name: str | None = None,
    search: Sequence[Path] | None = None,
    host_version: str | None = None,
    notice: Callable[[str], None] | None = None,
) -> CasesReport:
    """Run a package's runtime cases in mock mode. Raises CaseFileError for bad arguments."""
    from django.conf import settings

    from catalogue.manifest.loader import load_package

    root = Path(plugin_path)
    if not root.is_dir():
        raise CaseFileError(f"{root}: no such package folder")
    if not (root / "PLUGIN.md").is_file():
        raise CaseFileError(f"{root}: not a package (no PLUGIN.md)")
    cases = read_cases(root / CASES_FILE)
    if case_name is not None:
        cases = [c for c in cases if c["name"] == case_name]
        if not cases:
            raise CaseFileError(f"{root / CASES_FILE}: no case named {case_name!r}")
    version = host_version or settings.COVEL_HOST_VERSION
    loaded = load_package(root, host_version=version)
    notices: list[str] = []
    say = notice or (lambda text: print(text, file=sys.stderr))
    if not loaded.ok or loaded.manifest is None:
        problems = [str(i) for i in loaded.errors]
        results = [
            {
                "name": c["name"],
                "status": "failed",
                "result": {
                    "runtimeResults": [],
                    "pluginData": {},
                    "events": [],
                    "llmCalls": [],
                    "failures": [f"the package does not load: {p}" for p in problems],
                },
            }
            for c in cases
        ]
        return CasesReport("failed", loaded.package_id, results, notices)
    manifest = loaded.manifest
    folders = list(search) if search is not None else installed_plugin_folders()
    installed = _packages(manifest, version, folders)
    from sessions.resolver import resolve

    resolution = resolve(
        requested=[manifest.id],
        installed=installed,
        usable=lambda m: (True, None),
        host_version=version,
    )
    active = [installed[p] for p in resolution.active if p in installed]
    from pluginhost.pool import author_code_consent, manifest_trust

    community = [m.id for m in active if manifest_trust(m) == "community"]
    if community:
        # The cases run the author's code on purpose, approved or not: say so.
        text = (
            f"Note: {', '.join(community)} is community code: test_runtime runs the author's "
            "code (in a contained host: no network, no files but the package's, no approval needed)."
        )
        notices.append(text)
        say(text)
    results = []
    with author_code_consent("test_runtime"):
        for case in cases:
            for action in _rpc_actions(case, manifest):
                text = f"Unsupported rpc: {manifest.id}/{action}. Verify with the server."
                notices.append(text)
                say(text)
            results.append(_run_case(case, manifest, active, resolution))
    status = "ok" if all(r["status"] == "passed" for r in results) else "failed"
    return CasesReport(status, manifest.id, results, notices)


def _run_case(
    case: Mapping[str, Any], manifest: Manifest, active: list[Manifest], resolution: Any
) -> dict[str, Any]:
    replies = [dict(r) for r in case.get("llmResponses", [])]
    failures: list[str] = []
    if manifest.id not in resolution.active:
        verdict = resolution.verdict(manifest.id)
        failures.append(
            f"{manifest.id} cannot be active in a session: {verdict.message if verdict else 'unknown'}"
        )
    target = case.get("runtimeId")
    if target and manifest.runtime(target) is None:
        failures.append(f"runtimeId {target} is not a runtime of {manifest.id}")
        target = None
    with StandInModel(replies, exhausted_status=400) as model:
        turn = MockTurn(
            under_test=manifest,
            active=active,
            endpoint=Endpoint(slot="mock", base_url=model.base_url, model="mock"),
            message=str(case.get("message") or ""),
            payload=case.get("payload"),
            user_settings=dict(case.get("userSettings") or {}),
            target=(manifest.runtime(target).qualified_id if target else None),
            phase=str(case.get("phase", "playing")),
        )
        command = _command_action(str(case.get("message") or ""), manifest)
        if command:
            # A slash command calls an RPC action instead of playing a turn.
            turn.notes.append(
                f"the message is a command: it calls the RPC action {command}, not a turn"
            )
        elif not failures:
            turn.run()
            turn.commit()
            turn.run_jobs()
        unused = len(model.replies)
    failures += _check(case, turn) if not failures else []
    data: dict[str, list[dict[str, Any]]] = {}
    for (plugin, namespace, key), value in sorted(turn.store.items()):
        if plugin == manifest.id:
            data.setdefault(namespace, []).append({"key": key, "value": value})
    result = {
        "runtimeResults": [turn.outcomes[r].as_dict() for r in turn.order],
        "pluginData": data,
        "events": turn.events,
        "llmCalls": turn.llm_calls,
        "unusedLlmResponses": unused,
        "notes": turn.notes,
    }
    if failures:
        result["failures"] = failures
    return {"name": case["name"], "status": "failed" if failures else "passed", "result": result}
