"""Fixtures for the manifest schema tests: the schemas, their validators and the spec extract.

The spec page (/work/shared/spec/covel-plugin-manifest.md, or $COVEL_SPEC_DIR) is a plain-text
rendering. Its structure (section headings; per field its type, required flag and default, no
prose) is kept in spec_fields.json beside this file, so the schema is checked against it even
on a machine without the spec folder; test_schema_fixture_matches_spec.py keeps the two equal.
Test modules read spec_fields.json by path and use fixtures, never import this file, so they
work under every pytest import mode.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from catalogue.schemas import (
    PLUGIN_LOCALE,
    PLUGIN_MANIFEST,
    RUNTIME_MANIFEST,
    load_schema,
    locale_validators,
    manifest_validators,
)

HERE = Path(__file__).resolve().parent
SPEC_FIXTURE = HERE / "spec_fields.json"
SPEC_PAGE = Path(os.environ.get("COVEL_SPEC_DIR", "/work/shared/spec")) / "covel-plugin-manifest.md"
TABLE_HEADER = "Field\tType\tRequired\tDescription"
DEFAULT_MARK = re.compile(r"Default: (.+)\.$")


def parse_spec_page(text: str) -> list[dict[str, Any]]:
    """The spec page's tables: [{heading, rows: [{field, type, required, default?, says_default}]}].

    The page is a plain-text rendering: a heading line, a blank line, a tab-separated header,
    then one tab-separated row per field until a blank line.
    """
    lines = text.splitlines()
    sections: list[dict[str, Any]] = []
    for index, line in enumerate(lines):
        if line.strip() != TABLE_HEADER:
            continue
        back = index - 1
        while not lines[back].strip():
            back -= 1
        rows = []
        for row in lines[index + 1 :]:
            if not row.strip():
                break
            cells = row.split("\t")
            assert len(cells) == 4, f"spec row with {len(cells)} cells: {row!r}"
            field, type_, required, description = cells
            entry: dict[str, Any] = {
                "field": field,
                "type": type_,
                "required": required == "yes",
                # True when the row states a default in any wording ("Defaults to", "(default)").
                "says_default": bool(re.search(r"[Dd]efault|counts as", description)),
            }
            marker = DEFAULT_MARK.search(description)
            if marker:
                entry["default"] = json.loads(marker.group(1))
            rows.append(entry)
        sections.append({"heading": lines[back].strip(), "rows": rows})
    return sections


def dump_spec_sections(sections: list[dict[str, Any]]) -> str:
    """spec_fields.json's text: one line per field, so a diff shows which field changed."""
    out = ["["]
    for s_index, section in enumerate(sections):
        out.append('  {"heading": ' + json.dumps(section["heading"]) + ', "rows": [')
        rows = [json.dumps(row, ensure_ascii=False) for row in section["rows"]]
        out += ["    " + row + ("," if i < len(rows) - 1 else "") for i, row in enumerate(rows)]
        out.append("  ]}" + ("," if s_index < len(sections) - 1 else ""))
    out.append("]")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="session")
def spec_tools() -> SimpleNamespace:
    """The spec page helpers, for the test that keeps spec_fields.json equal to the page."""
    return SimpleNamespace(
        page=SPEC_PAGE, extract=SPEC_FIXTURE, parse=parse_spec_page, dump=dump_spec_sections
    )


@pytest.fixture(scope="session")
def spec_sections() -> list[dict[str, Any]]:
    return json.loads(SPEC_FIXTURE.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def plugin_schema() -> dict[str, Any]:
    return load_schema(PLUGIN_MANIFEST)


@pytest.fixture(scope="session")
def runtime_schema() -> dict[str, Any]:
    return load_schema(RUNTIME_MANIFEST)


@pytest.fixture(scope="session")
def locale_schema() -> dict[str, Any]:
    return load_schema(PLUGIN_LOCALE)


@pytest.fixture(scope="session")
def plugin_validator():
    return manifest_validators()[0]


@pytest.fixture(scope="session")
def runtime_validator():
    return manifest_validators()[1]


@pytest.fixture(scope="session")
def locale_validator():
    return locale_validators()[0]


@pytest.fixture(scope="session")
def runtime_locale_validator():
    return locale_validators()[1]
