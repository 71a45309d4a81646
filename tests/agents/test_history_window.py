"""How much history an agent runtime reads in a real turn (covel-plugins-with-local-code.md,
"Controlling how much history the model sees"): without agent.history the whole game's
committed turns; with maxTurns only the last ones. Reading them costs the same number of
queries however long the game is.

Alice owns the world and the session; nobody else takes part.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import ModelSlot
from agents.standin import StandInModel
from catalogue.manifest.loader import load_package
from catalogue.services import package_content_hash, package_index
from sessions.models import Turn
from sessions.services import session_create
from sessions.turns import TurnRequest, turn_run

REPO = Path(__file__).resolve().parents[2]


def _index(folder: Path) -> None:
    result = load_package(folder, host_version="0.1.0")
    assert result.ok, [str(e) for e in result.errors]
    package_index(
        result=result,
        source="bundled",
        content_hash=package_content_hash(path=folder),
        host_version="0.1.0",
    )


def _recall_package(root: Path, package_id: str, history: dict[str, Any] | None) -> Path:
    agent: dict[str, Any] = {"model": "utility"}
    if history is not None:
        agent["history"] = history
    frontmatter = {
        "id": package_id,
        "version": "1.0.0",
        "description": f"The {package_id} test package.",
        "runtime": {"schedule": {"stage": "post-turn"}, "agent": agent},
    }
    folder = root / package_id
    folder.mkdir()
    (folder / "PLUGIN.md").write_text(
        f"---\n{json.dumps(frontmatter, indent=1)}\n---\nYou are {package_id}. Recall the game.\n",
        encoding="utf-8",
    )
    return folder


def _session_with_past_turns(alice: Any, plugins: list[str], count: int, world_id: str) -> Any:
    from worlds.models import World

    world = World.objects.create(
        world_id=world_id,
        name="Harbor Nights",
        description="A rainy port.",
        plugins=plugins,
        owner=alice,
    )
    session = session_create(owner=alice, world=world)
    for number in range(1, count + 1):
        Turn.objects.create(
            session=session,
            number=number,
            kind=Turn.Kind.PLAYER,
            status=Turn.Status.COMMITTED,
            player_message=f"move {number}",
            narrative_text=f"story {number}",
        )
    session.turn_count = count
    session.save(update_fields=["turn_count"])
    return session


def _prompt_of(model: StandInModel, package_id: str) -> str:
    for request in model.requests:
        if f"You are {package_id}." in request["messages"][0]["content"]:
            return json.dumps(request["messages"])
    raise AssertionError(f"the stand-in model got no request from {package_id}")


@pytest.fixture
def recall_packages(db, tmp_path: Path) -> None:
    _index(REPO / "plugins" / "storyteller")
    _index(_recall_package(tmp_path, "recall", None))
    _index(_recall_package(tmp_path, "recall-two", {"maxTurns": 2}))


def test_without_agent_history_an_agent_sees_the_whole_game(recall_packages, alice):
    session = _session_with_past_turns(alice, ["recall", "recall-two"], 30, world_id="harbor")
    with StandInModel([{"content": "Noted."}, {"content": "Noted."}]) as model:
        ModelSlot.objects.create(name="utility", base_url=model.base_url, model="stand-in")
        turn_run(session=session, request=TurnRequest(message="I look back."))
        whole, bounded = _prompt_of(model, "recall"), _prompt_of(model, "recall-two")
    # The default is the shared history of the whole game, not a recent window.
    for number in (1, 2, 10, 30):
        assert f'"move {number}"' in whole and f'"story {number}"' in whole
    # An explicit maxTurns still bounds it.
    assert '"move 29"' in bounded and '"move 30"' in bounded
    assert '"move 28"' not in bounded and '"move 1"' not in bounded


def _turn_queries(alice: Any, past: int) -> tuple[int, int]:
    """(all queries, history reads) of one turn in a game with `past` committed turns."""
    session = _session_with_past_turns(alice, ["recall"], past, world_id=f"harbor-{past}")
    with StandInModel([{"content": "Noted."}]) as model:
        ModelSlot.objects.update_or_create(
            name="utility", defaults={"base_url": model.base_url, "model": "stand-in"}
        )
        with CaptureQueriesContext(connection) as queries:
            turn_run(session=session, request=TurnRequest(message="I look back."))
        assert '"move 1"' in _prompt_of(model, "recall")
    table = Turn._meta.db_table
    reads = sum(
        q["sql"].startswith("SELECT")
        and f'FROM "{table}"' in q["sql"]
        and "player_message" in q["sql"]
        for q in queries
    )
    return len(queries), reads


def test_reading_the_whole_history_costs_the_same_queries_for_3_or_40_turns(recall_packages, alice):
    short, long = _turn_queries(alice, 3), _turn_queries(alice, 40)
    assert short == long
    assert long[1] == 1
