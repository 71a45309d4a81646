"""Helpers and fixtures of the play tests (no tests here; other test_play_* modules import it).

Personas (tests/conftest.py): Alice owns the world "harbor" and her sessions of it; Bob is staff
and may act on any session, for support; Charlie is another player who may see nothing of
Alice's; the anonymous visitor gets 401 from the API and the login page from HTML.

Packages are real folders indexed through the catalogue (the bundled ones under plugins/, or
small ones written into tmp_path) and run in the real Node host.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from catalogue.manifest.loader import load_package
from catalogue.models import Package
from catalogue.services import package_content_hash, package_index

REPO = Path(__file__).resolve().parents[2]


def index_folder(path: Path, *, source: str = "bundled", valid: bool = True) -> Package:
    result = load_package(path, host_version="0.1.0")
    assert result.ok is valid, [str(e) for e in result.errors]
    return package_index(
        result=result,
        source=source,
        content_hash=package_content_hash(path=path),
        host_version="0.1.0",
    )


def index_bundled(*package_ids: str) -> dict[str, Package]:
    return {pid: index_folder(REPO / "plugins" / pid) for pid in package_ids}


def write_plugin(
    root: Path,
    package_id: str,
    frontmatter: dict[str, Any],
    *,
    handler: str | None = None,
    runtimes: dict[str, tuple[dict[str, Any], str]] | None = None,
    files: dict[str, str] | None = None,
) -> Path:
    """A package folder: PLUGIN.md from frontmatter (JSON is YAML), handler.js, runtimes, files."""
    folder = root / package_id
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        "id": package_id,
        "version": "1.0.0",
        "description": f"The {package_id} test package.",
        **frontmatter,
    }
    (folder / "PLUGIN.md").write_text(
        f"---\n{json.dumps(data, indent=1)}\n---\nTest package.\n", encoding="utf-8"
    )
    if handler is not None:
        (folder / "handler.js").write_text(handler, encoding="utf-8")
    for name, (runtime, code) in (runtimes or {}).items():
        sub = folder / "runtimes" / name
        sub.mkdir(parents=True, exist_ok=True)
        (sub / "RUNTIME.md").write_text(
            f"---\n{json.dumps(runtime, indent=1)}\n---\nRuntime {name}.\n", encoding="utf-8"
        )
        (sub / "handler.js").write_text(code, encoding="utf-8")
    for relative, text in (files or {}).items():
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return folder


def make_world(
    *,
    owner: Any,
    plugins: list[str],
    settings: dict[str, Any] | None = None,
    world_id: str = "harbor",
) -> Any:
    from worlds.models import World

    return World.objects.create(
        world_id=world_id,
        name="Harbor Nights",
        description="A rainy port.",
        plugins=plugins,
        plugin_settings=settings or {},
        owner=owner,
    )


def play(session: Any, message: str) -> dict[str, Any]:
    from sessions.turns import TurnRequest, turn_run

    return turn_run(session=session, request=TurnRequest(message=message))


def by_runtime(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["runtime"]: r for r in result["runtimes"]}


@pytest.fixture
def bundled_world(db, alice):
    """Alice's world with the bundled storyteller, word-count, dice and notebook."""
    index_bundled("storyteller", "word-count", "dice", "notebook")
    return make_world(
        owner=alice,
        plugins=["word-count", "dice", "notebook"],
        settings={"storyteller": {"style": "terse"}},
    )


@pytest.fixture(scope="module")
def file_database(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
):
    """Threads that write at once need a real database: PostgreSQL as is, SQLite as a file.

    pytest-django's in-memory SQLite uses shared-cache table locks, which fail at once instead
    of waiting; a file in WAL mode waits like production does. Every thread's new connection
    is built from connections.settings, so the swap is made there too.
    """
    import copy
    import sqlite3

    from django.db import connections

    original = connections["default"]
    if original.vendor != "sqlite":
        yield
        return
    path = tmp_path_factory.mktemp("play-db") / "play.sqlite3"
    with django_db_blocker.unblock():
        original.ensure_connection()
        target = sqlite3.connect(path)
        original.connection.backup(target)
        target.close()
    settings_dict = copy.deepcopy(original.settings_dict)
    settings_dict["NAME"] = str(path)
    settings_dict["TEST"] = {**settings_dict.get("TEST", {}), "NAME": str(path)}
    saved = connections.settings["default"]
    connections.settings["default"] = settings_dict
    swapped = original.__class__(settings_dict, "default")
    connections["default"] = swapped
    try:
        yield
    finally:
        with django_db_blocker.unblock():
            swapped.close()
        connections["default"] = original
        connections.settings["default"] = saved


def wait_for_event(session: Any, predicate: Any, timeout: float = 20.0) -> Any:
    """Poll the session's event stream (another thread writes it) until predicate(event) holds."""
    import time

    from eventlog.models import SessionEvent

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for event in SessionEvent.objects.filter(session_id=session.pk).order_by("seq"):
            if predicate(event):
                return event
        time.sleep(0.02)
    raise AssertionError("the expected event never arrived")


# A runtime that holds its turn open until the test calls hold_release(session), so tests can act
# while a turn is provably running. It watches the player's submitted inputs, which
# ctx.store.listPlayerInputs reads from the database at each call (plugin data, read once a
# turn, would never show a row written after the turn first read it).
HOLD = """export default async function handler(ctx) {
  for (let i = 0; i < 400; i += 1) {
    const inputs = await ctx.store.listPlayerInputs();
    if (inputs.some((input) => input.formId === "go")) break;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  await ctx.pluginData.set("hold", "done", true);
  return { outcome: "success", value: { held: true } };
}
"""


def hold_release(session: Any) -> None:
    """Let a HOLD runtime of the session go on (a submitted input with form id "go")."""
    from django.utils import timezone

    from sessions.models import Interaction

    Interaction.objects.create(
        session=session,
        plugin_id="test",
        runtime_id="test/go",
        interaction_id=f"go-{timezone.now().timestamp()}",
        form={"id": "go"},
        status=Interaction.Status.SUBMITTED,
        values={},
        submitted_at=timezone.now(),
    )


def run_in_thread(target: Any, *args: Any) -> tuple[threading.Thread, dict[str, Any]]:
    """Start target(*args) in a thread with its own database connection; the dict gets its
    "result" or "error" (the test asserts on them after joining the thread)."""
    from django.db import connections

    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["result"] = target(*args)
        except Exception as exc:
            outcome["error"] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=work)
    thread.start()
    return thread, outcome


def stream_text(answer: Any) -> str:
    """The whole body of a streaming response, sync or async (pushed streams are async)."""
    content = answer.streaming_content
    if hasattr(content, "__aiter__"):
        from asgiref.sync import async_to_sync

        async def collect() -> list[bytes]:
            return [bytes(part) async for part in content]

        parts = async_to_sync(collect)()
    else:
        parts = list(content)
    return b"".join(parts).decode()
