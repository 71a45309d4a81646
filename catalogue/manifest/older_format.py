"""Covel's previous manifest format, recognised by its marks (docs/loader.md "Older formats").

The loader refuses those fields one by one anyway; one `older-format` finding per package says
why, so the author of a real Covel package knows to run `manage.py plugin_migrate`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from catalogue.manifest.context import PLUGIN_FILE, RUNTIMES_DIR, Context


def detect_older_format(ctx: Context, root: Path) -> None:
    """Name Covel's previous manifest format when its marks are present, once per package.

    Its fields are refused one by one anyway; this says why, so an author of a real Covel
    package knows the whole manifest needs rewriting, not a typo fixing.
    """
    marks: list[tuple[str, str, str]] = []  # (file, pointer, what)

    def scan(data: Any, file: str, where: str) -> None:
        if isinstance(data, dict):
            for key, value in data.items():
                at = f"{where}/{key}"
                if key == "trigger" and value == "scheduled":
                    marks.append((file, at, "trigger: scheduled (now schedule.stage)"))
                elif (
                    key == "trigger"
                    and isinstance(value, dict)
                    and value.get("type") == "scheduled"
                ):
                    marks.append(
                        (file, f"{at}/type", "trigger.type: scheduled (now an auto trigger)")
                    )
                elif key == "agent" and isinstance(value, dict):
                    if "llm" in value:
                        marks.append((file, f"{at}/llm", "agent.llm (now agent model settings)"))
                    loop = value.get("loop")
                    if isinstance(loop, dict) and "completion" in loop:
                        marks.append(
                            (
                                file,
                                f"{at}/loop/completion",
                                "agent.loop.completion (now agent.completion)",
                            )
                        )
                elif key == "source" and isinstance(value, dict) and "kind" in value:
                    marks.append((file, f"{at}/kind", "source.kind"))
                scan(value, file, at)
        elif isinstance(data, list):
            for i, item in enumerate(data):
                scan(item, file, f"{where}/{i}")

    def runtime_marks(data: Any, file: str, base: str) -> None:
        if not isinstance(data, dict):
            return
        if data.get("type") in ("agent", "function"):
            marks.append((file, f"{base}/type", f"a runtime type: {data['type']} (now implied)"))
        schedule = data.get("schedule")
        if isinstance(schedule, dict):
            for key, what in (
                ("completion", "schedule.completion (now schedule.detached)"),
                ("manual", "schedule.manual (now schedule.background)"),
            ):
                if key in schedule:
                    marks.append((file, f"{base}/schedule/{key}", what))

    data = ctx.data
    for key, what in (
        ("type", "a top-level type: (now kind)"),
        ("optional", "a top-level optional:"),
        # The covel-plugins repository's format (covel-ai/covel-plugins).
        ("name", "a top-level name: (now id)"),
        ("pluginType", "pluginType: (now kind)"),
    ):
        if key in data:
            marks.append((PLUGIN_FILE, f"/{key}", what))
    scan(data, PLUGIN_FILE, "")
    runtime_marks(data.get("runtime"), PLUGIN_FILE, "/runtime")
    for rt in ctx.runtimes:
        if rt.file != PLUGIN_FILE:
            runtime_marks(rt.data, rt.file, "")
            scan(rt.data, rt.file, "")
    runtimes_dir = root / RUNTIMES_DIR
    if runtimes_dir.is_dir():
        for child in sorted(runtimes_dir.iterdir()):
            if (child / PLUGIN_FILE).is_file():
                marks.append(
                    (
                        f"{RUNTIMES_DIR}/{child.name}/{PLUGIN_FILE}",
                        "",
                        "a child runtimes/<id>/PLUGIN.md (now RUNTIME.md)",
                    )
                )
    if not marks:
        return
    file, where, _ = marks[0]
    ctx.error(
        file,
        where,
        "older-format",
        "this package is written in Covel's previous manifest format ("
        + "; ".join(what for _, _, what in marks)
        + "); `manage.py plugin_migrate PATH` rewrites it in the current format",
    )
