"""The turn's storage in memory: what the offline runtime cases (sessions/cases.py) run the
turn's own steps over, without a database.

The session, its world and its turns are unsaved model instances (nothing reads them back from
a table); plugin data, exports and forms live in dicts; events are kept in a list. What an
offline case changes on purpose is said here:
- agent runtimes of other packages than the one under test (and, when a case targets one
  runtime, its other agents) are skipped as `mock-skipped`, so the script covers only those;
- every agent talks to the case's stand-in model (`endpoint`), and its model calls are kept;
- lifecycle hooks are dispatched as in a live turn, in the real plugin host; what a hook reads
  of plugin data is this store's committed values (a live hook reads the session's rows), and
  its aborts and failures are kept with the other events;
- detached runtimes are not sent to a worker: they wait in `deferred` for the case runner,
  which runs each as a background turn of its own over this store, as a worker would;
- the time written on what a run stamps (session lore) is one fixed instant, so a case's report
  is the same on every run.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from agents.runtime import OverlayCallbacks
from catalogue.manifest.types import Manifest, RuntimeManifest, thaw
from pluginhost.callbacks import HostCallbacks
from sessions import hooks
from sessions.callbacks import RecursiveCalls
from sessions.models import Session, Turn
from sessions.operations import MISSING, stored_size
from sessions.turn_store import DeferredJob
from worlds.models import World

MOCK_NOW = "2000-01-01T00:00:00+00:00"
MOCK_WORLD = {"id": "mock-world", "name": "Mock world", "characters": []}


class MemoryCallbacks(RecursiveCalls, OverlayCallbacks):
    """OverlayCallbacks that also serve ctx.recursiveCall inside a function run."""

    def __init__(self, *, on_recurse: Callable[..., dict[str, Any]] | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.on_recurse = on_recurse


class CommittedReads:
    """The store's committed plugin data, read as an overlay is: what a hook's callbacks read
    (a live hook's SessionCallbacks have no overlay and read the session's rows, so a hook never
    sees a runtime's staged writes)."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def get(self, *, runtime: str, plugin: str, namespace: str, key: str) -> Any:
        value = self.store.stored(plugin, namespace, key)
        return None if value is MISSING else copy.deepcopy(value)

    def list(self, *, runtime: str, plugin: str, namespace: str) -> list[dict[str, Any]]:
        values = self.store.stored_list(plugin, namespace)
        return [{"key": k, "value": copy.deepcopy(values[k])} for k in sorted(values)]


def setting_defaults(manifest: Manifest) -> dict[str, Any]:
    return {
        str(s["key"]): s.get("default")
        for s in thaw(manifest.contributes.get("settings") or ())
        if "default" in s
    }


class MemoryStore:
    """A throwaway session held in memory (see the module's docstring)."""

    def __init__(
        self,
        *,
        under_test: Manifest,
        installed: Mapping[str, Manifest],
        endpoint: Any,
        user_settings: Mapping[str, Any],
        target: str | None,
        phase: str,
    ) -> None:
        world = World(world_id="mock-world", name="Mock world", description="")
        # The ids a case's ctx shows (sessionId "mock-session"): never saved, so never a UUID.
        self.session = Session(
            id="mock-session", world=world, phase=phase, locale="en", trigger_ledger={}
        )
        self.under_test = under_test
        self.installed = installed
        self.endpoint = endpoint
        self.case_settings = dict(user_settings)
        self.target = target
        self.data: dict[tuple[str, str, str], Any] = {}
        self.exports: dict[tuple[str, str], Any] = {}
        self.interactions: set[str] = set()
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.llm_calls: list[dict[str, Any]] = []
        self.tool_calls: dict[str, list[dict[str, Any]]] = {}
        self.deferred: list[DeferredJob] = []

    # -------------------------------------------------------------- reads

    def stored(self, plugin: str, namespace: str, key: str) -> Any:
        return self.data.get((plugin, namespace, key), MISSING)

    def stored_list(self, plugin: str, namespace: str) -> dict[str, Any]:
        return {k: v for (p, n, k), v in self.data.items() if (p, n) == (plugin, namespace)}

    def plugin_data_usage(self, plugin: str) -> tuple[int, int]:
        values = [v for (p, _, _), v in self.data.items() if p == plugin]
        return len(values), sum(stored_size(v) for v in values)

    def world(self) -> dict[str, Any]:
        return {**MOCK_WORLD, "characters": []}

    def user_settings(self, package_id: str, manifest: Manifest | None = None) -> dict[str, Any]:
        manifest = self.installed.get(package_id)
        values = setting_defaults(manifest) if manifest is not None else {}
        if package_id == self.under_test.id:
            values.update(self.case_settings)
        return values

    def export_latest(self, plugin: str, record_as: str) -> Any:
        return self.exports.get((plugin, record_as), MISSING)

    def interaction_exists(self, interaction_id: str) -> bool:
        return interaction_id in self.interactions

    def history_rows(
        self, max_turns: int | None, window: Callable[[int], int | None] | None
    ) -> list[tuple[str, str]]:
        return []  # a case is the session's first turn

    def history_extended(self, active: Sequence[Manifest]) -> bool:
        return False

    def history_log(self) -> Any:
        return []

    def now(self) -> str:
        return MOCK_NOW

    # -------------------------------------------------------------- plugin code and agents

    def callbacks(
        self,
        *,
        package: str,
        runtime: str,
        overlay: Any,
        on_emit: Callable[[str, dict[str, Any]], None],
        manifest: Manifest | None,
        on_recurse: Callable[..., dict[str, Any]] | None = None,
    ) -> HostCallbacks:
        return MemoryCallbacks(
            overlay=overlay,
            package=package,
            runtime=runtime,
            session=self._ctx_session(),
            on_emit=on_emit,
            on_recurse=on_recurse,
        )

    def _ctx_session(self) -> dict[str, Any]:
        return {
            "id": "mock-session",
            "phase": self.session.phase,
            "turnCount": 0,
            "locale": "en",
            "worldId": "mock-world",
        }

    def hook_callbacks(self, manifest: Manifest) -> HostCallbacks:
        """What a package's hooks are given: committed reads, no recursive call, no emit."""
        return MemoryCallbacks(
            overlay=CommittedReads(self),
            package=manifest.id,
            runtime=manifest.id,
            session=self._ctx_session(),
            on_emit=None,
            on_recurse=None,
        )

    def hook_dispatcher(
        self, *, manifests: Sequence[Manifest], turn_id: str, emit: Any, settings_for: Any
    ) -> hooks.HookDispatcher:
        return hooks.HookDispatcher(
            session=self.session,
            manifests=manifests,
            turn_id=turn_id,
            emit=emit,
            settings_for=settings_for,
            callbacks_for=self.hook_callbacks,
        )

    def prompt_segments(
        self,
        *,
        active: Sequence[Manifest],
        turn_id: str,
        message: str,
        world: Any,
        failures: list[dict[str, Any]],
        runtime: str,
        overlay: Any,
    ) -> list[dict[str, Any]]:
        from sessions import extensions

        return extensions.prompt_segments(
            session=None,
            active=active,
            turn_id=turn_id,
            player_message=message,
            world=world,
            failures=failures,
            callbacks_for=lambda plugin: self.callbacks(
                package=plugin, runtime=runtime, overlay=overlay, on_emit=None, manifest=None
            ),
        )

    def agent_refused(self, manifest: Manifest, runtime: RuntimeManifest) -> str | None:
        rid = runtime.qualified_id
        if manifest.id != self.under_test.id:
            return (
                f"{rid} is an agent runtime of another package; mock mode scripts only "
                f"{self.under_test.id}"
            )
        if self.target and rid != self.target and runtime.id != self.target:
            return f"the case targets {self.target}, not {rid}"
        return None

    def agent_endpoint(self, runtime: RuntimeManifest, settings: Mapping[str, Any]) -> Any:
        from agents.gateway import Endpoint
        from agents.runtime import agent_slot

        return Endpoint(
            slot=agent_slot(runtime, dict(settings)),
            base_url=self.endpoint.base_url,
            model=self.endpoint.model,
        )

    def agent_ran(self, runtime: str, run: Any) -> None:
        for call in run.llm_calls:
            self.llm_calls.append({"runtimeId": runtime, **call})
        self.tool_calls[runtime] = list(run.tool_calls)

    # -------------------------------------------------------------- events and the lease

    def append_event(self, type: str, payload: Mapping[str, Any]) -> None:
        self.events.append((type, dict(payload)))

    def events_hold(self) -> int:
        return len(self.events)

    def events_undo(self, mark: int) -> None:
        pass  # an offline case keeps what it was told: nothing rolls back here

    def events_flush(self) -> None:
        pass

    def lease_renew(self, token: str) -> None:
        pass

    # -------------------------------------------------------------- the commit

    @contextmanager
    def commit_transaction(self, *, retryable: bool = False) -> Iterator[None]:
        yield

    def session_for_commit(self, *, locked: bool) -> Session:
        return self.session

    def latest(self, plugin: str, namespace: str, key: str) -> Any:
        return self.stored(plugin, namespace, key)

    def plugin_data_fresh(self) -> None:
        pass

    def plugin_data_write(self, values: Mapping[Any, Any]) -> None:
        for where, value in values.items():
            if value is MISSING:
                self.data.pop(where, None)
            else:
                self.data[where] = value

    def export_record(
        self, *, plugin: str, runtime: str, record_as: str, value: Any, turn: Turn
    ) -> None:
        self.exports[(plugin, record_as)] = value

    def jobs_defer(self, jobs: Sequence[DeferredJob]) -> list[str]:
        self.deferred.extend(jobs)
        return [f"mock-job-{len(self.deferred) - len(jobs) + i + 1}" for i in range(len(jobs))]

    def session_update(self, update: Mapping[str, Any], *, token: str | None = None) -> bool:
        return True  # TurnState sets the same fields on its session, which is this one

    def turn_save(self, turn: Turn) -> None:
        pass

    def interaction_create(
        self, *, turn: Turn, plugin: str, runtime: str, interaction_id: str, form: Any
    ) -> None:
        self.interactions.add(interaction_id)

    def hooks_record(self, turn: Turn) -> None:
        pass
