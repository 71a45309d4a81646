"""Offline runtime cases (`tests/runtime-cases.json`) in mock mode.

Each case is one turn of a throwaway session that holds the package under test and what the
resolver adds for it (its required providers and the core packages). The turn is the session's
own: the same steps as every turn (sessions.turns.turn_steps: the TurnStart hook, stages, the
TurnStop hook, commit), run over a sessions.memory_store.MemoryStore instead of the database,
so a case sees what a real turn does (guards, lifecycle hooks, input binding, proposals, forms,
recursive calls, the commit's drops). The model
is the stand-in (agents.standin) over real HTTP on loopback, replaying the case's
`llmResponses` in order; plugin code runs in the real Node plugin host.

In mock mode (the store's choices, see sessions/memory_store.py):
- agent runtimes of the package under test run against the script; agent runtimes of other
  packages are skipped (`mock-skipped`), so the script only has to cover the package's own;
- function runtimes of every active package run for real (the narrator writes the story);
- detached runtimes run after the turn's commit as background turns, since there is no
  worker: the case sees their result;
- lifecycle hooks are dispatched as in a live turn; a hook's abort or failure is a note of the
  case (a TurnStart abort says no runtime ran);
- RPC actions (`rpc` in a case, or a message that is a slash command) are not run: the spec's
  notice `Unsupported rpc: <plugin>/<action>. Verify with the server.` is printed, not an error.

It lives in sessions (it was agents/cases.py): it drives the session's resolver and turn
around the agent runtime, and agents sit below sessions.
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
from agents.standin import StandInModel
from catalogue.manifest.types import Manifest, thaw
from sessions.background import background_turn
from sessions.memory_store import MemoryStore
from sessions.models import Turn
from sessions.operations import MISSING
from sessions.turn_commit import turn_commit
from sessions.turn_stages import runtime_run_single, turn_plan
from sessions.turn_state import DEFERRED, DROPPED, SUCCEEDED, TurnRequest, TurnState
from sessions.turns import turn_steps

CASES_FILE = "tests/runtime-cases.json"
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


# A turn's statuses as a case reports them: a run whose writes were refused failed.
CASE_STATUS = {
    "succeeded": "success",
    "failed": "failed",
    "skipped": "skipped",
    "dropped": "failed",
}
MOCK_SOURCE = "mock-turn-1"  # what a case's dice seeds are keyed by: "mock-turn-1:<runtime>"


@dataclass
class CaseTurn:
    """One case's turn, run by the session's own turn steps (sessions/turns.py) over a
    MemoryStore, and what happened: outcomes in finishing order, plugin events, notes."""

    under_test: Manifest
    store: MemoryStore
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    missing: Any = MISSING

    @property
    def data(self) -> dict[tuple[str, str, str], Any]:
        return self.store.data

    def take(self, state: TurnState) -> None:
        """The outcomes of a finished turn (a deferred runtime waits for its job's)."""
        for rid in state.order:
            result = state.results[rid]
            if result.status == DEFERRED:
                continue
            self.outcomes[rid] = Outcome(
                rid,
                result.package,
                result.kind,
                CASE_STATUS.get(result.status, result.status),
                result.code,
                result.reason,
                output=result.output if result.status in (SUCCEEDED, DROPPED) else None,
                tool_calls=self.store.tool_calls.get(rid, []),
                warnings=list(result.warnings),
                concealed=result.concealed,
            )
            if rid not in self.order:
                self.order.append(rid)

    def take_events(self) -> None:
        for type, payload in self.store.events:
            if type == "plugin.event":
                self.events.append(
                    {
                        "topic": payload["topic"],
                        "payload": payload["payload"],
                        "runtimeId": payload["runtime"],
                    }
                )
            elif type in ("hook.aborted", "hook.failed"):
                notice = payload["notice"]
                self.notes.append(f"{notice['title']}: {notice['body']}")
            elif type == "extension.failed":
                self.notes.append(
                    f"{payload['point']} {payload['plugin']}/{payload['extension']} was skipped "
                    f"[{payload['code']}]: {payload['message']}"
                )
        self.store.events.clear()


def _case_turn(
    *,
    under_test: Manifest,
    installed: Mapping[str, Manifest],
    resolution: Any,
    endpoint: Endpoint,
    message: str,
    payload: Any,
    user_settings: Mapping[str, Any],
    target: str | None,
    phase: str,
) -> CaseTurn:
    """One turn of a throwaway session in memory, then its detached runtimes as the worker
    would run them: each a background turn of its own, committed when it succeeds."""
    store = MemoryStore(
        under_test=under_test,
        installed=installed,
        endpoint=endpoint,
        user_settings=user_settings,
        target=target,
        phase=phase,
    )
    case = CaseTurn(under_test=under_test, store=store)
    request = TurnRequest(
        message=message,
        manual={target: payload} if target else {},
        turn_id=MOCK_SOURCE,  # type: ignore[arg-type]  # an unsaved row: ctx.turnId "mock-turn-1"
        execution_source=MOCK_SOURCE,
    )
    turn = Turn(id=request.turn_id, session=store.session, number=1, player_message=message)
    state = TurnState(
        session=store.session,
        turn=turn,
        resolution=resolution,
        installed=installed,
        request=request,
        token=None,
        store=store,
    )
    aborted = turn_steps(state, turn_plan(state))
    case.take(state)
    case.take_events()
    if aborted is not None:
        case.notes.append(f"no runtime ran: {aborted}")
        return case
    if target and target not in case.outcomes and not store.deferred:
        case.notes.append(f"runtime {target} was not scheduled in this turn")
    while store.deferred:
        job = store.deferred.pop(0)
        case.take(_job_turn(store, installed, resolution, turn, job))
        case.take_events()
    return case


def _job_turn(
    store: MemoryStore, installed: Mapping[str, Manifest], resolution: Any, source: Turn, job: Any
) -> TurnState:
    """A deferred runtime as a worker runs it (sessions/background.py): a background turn with
    the inputs its source turn froze, committed only when it succeeds."""
    runtime = next(r for r in installed[job.plugin].runtimes if r.qualified_id == job.runtime)
    frozen = dict(job.inputs)
    state, planned = background_turn(
        session=store.session,
        installed=installed,
        resolution=resolution,
        package=job.plugin,
        runtime=runtime,
        frozen=frozen,
        source=source,
        source_turn=job.source_turn,
        execution_source=MOCK_SOURCE,
        store=store,
        turn_id=f"mock-job-{job.runtime}",  # never saved
    )
    result = runtime_run_single(state, planned, dict(frozen.get("inputs") or {}))
    if result.status == SUCCEEDED:
        turn_commit(state, session_locked=True)
    return state


# ----------------------------------------------------------------------------- checks


def _check(case: Mapping[str, Any], turn: CaseTurn) -> list[str]:
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
        value = turn.data.get((plugin, item["namespace"], item["key"]), turn.missing)
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
            results.append(_run_case(case, manifest, installed, resolution))
    status = "ok" if all(r["status"] == "passed" for r in results) else "failed"
    return CasesReport(status, manifest.id, results, notices)


def _no_store(
    manifest: Manifest, installed: Mapping[str, Manifest], endpoint: Endpoint
) -> MemoryStore:
    """The store of a case that plays no turn (a command, or a package that cannot be active)."""
    return MemoryStore(
        under_test=manifest,
        installed=installed,
        endpoint=endpoint,
        user_settings={},
        target=None,
        phase="playing",
    )


def _run_case(
    case: Mapping[str, Any],
    manifest: Manifest,
    installed: Mapping[str, Manifest],
    resolution: Any,
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
        endpoint = Endpoint(slot="mock", base_url=model.base_url, model="mock")
        command = _command_action(str(case.get("message") or ""), manifest)
        turn = CaseTurn(under_test=manifest, store=_no_store(manifest, installed, endpoint))
        if command:
            # A slash command calls an RPC action instead of playing a turn.
            turn.notes.append(
                f"the message is a command: it calls the RPC action {command}, not a turn"
            )
        elif not failures:
            turn = _case_turn(
                under_test=manifest,
                installed=installed,
                resolution=resolution,
                endpoint=endpoint,
                message=str(case.get("message") or ""),
                payload=case.get("payload"),
                user_settings=dict(case.get("userSettings") or {}),
                target=(manifest.runtime(target).qualified_id if target else None),
                phase=str(case.get("phase", "playing")),
            )
        unused = len(model.replies)
    failures += _check(case, turn) if not failures else []
    data: dict[str, list[dict[str, Any]]] = {}
    for (plugin, namespace, key), value in sorted(turn.data.items()):
        if plugin == manifest.id:
            data.setdefault(namespace, []).append({"key": key, "value": value})
    result = {
        "runtimeResults": [turn.outcomes[r].as_dict() for r in turn.order],
        "pluginData": data,
        "events": turn.events,
        "llmCalls": turn.store.llm_calls,
        "unusedLlmResponses": unused,
        "notes": turn.notes,
    }
    if failures:
        result["failures"] = failures
    return {"name": case["name"], "status": "failed" if failures else "passed", "result": result}
