"""docs/architecture.md's turn pipeline is the code's: every function its table names is defined
in the module the line names, and sessions.turns.turn_steps calls the top-level steps after the
plan in the table's order. Read with ast; nothing is imported."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
DOC = ROOT / "docs" / "architecture.md"


def pipeline_rows() -> list[tuple[str, list[str], list[str], bool]]:
    """(step, functions, module paths, top level?) per line of the table."""
    text = DOC.read_text(encoding="utf-8")
    block = text.split("One line per step:", 1)[1].split("```", 2)[1]
    rows = []
    for line in block.splitlines()[2:]:
        if not line.strip() or line.lstrip().startswith("*"):
            continue
        match = re.match(r"^( *)(\S+)\s+(.+?)\s{2,}(sessions/[^\s,]+(?:, [^\s,]+)?)", line)
        assert match, f"docs/architecture.md: a pipeline line is not step/function/module: {line!r}"
        indent, step, functions, modules = match.groups()
        names = [n.strip() for n in re.split(r",|\|", functions)]
        paths = [m.strip() for m in modules.split(",")]
        paths = [p if p.startswith("sessions/") else f"sessions/{p}" for p in paths]
        rows.append((step, names, paths, len(indent) == 1))
    return rows


def defined(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    return {
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
    }


def test_every_step_names_a_function_its_module_defines() -> None:
    rows = pipeline_rows()
    assert [r[0] for r in rows if r[3]][:4] == ["resolve", "plan", "TurnStart", "stages"]
    for step, names, paths, _ in rows:
        found = set().union(*(defined(p) for p in paths))
        missing = [n for n in names if n not in found]
        assert not missing, f"docs/architecture.md, step {step}: {missing} not in {paths}"


def test_turn_steps_calls_the_steps_after_the_plan_in_the_tables_order() -> None:
    tree = ast.parse((ROOT / "sessions" / "turns.py").read_text(encoding="utf-8"))
    steps = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "turn_steps")
    calls = sorted(
        (
            node
            for node in ast.walk(steps)
            if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
        ),
        key=lambda node: (node.lineno, node.col_offset),
    )
    called = [c.func.attr if isinstance(c.func, ast.Attribute) else c.func.id for c in calls]
    table = [names[0] for step, names, _, top in pipeline_rows() if top]
    after_plan = table[table.index("turn_plan") + 1 : table.index("DatabaseStore")]
    assert [c for c in called if c in after_plan] == after_plan
