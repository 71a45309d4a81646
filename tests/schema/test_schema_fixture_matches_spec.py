"""spec_fields.json is an exact extract of the spec page, so the schema tests check the spec.

Regenerate the extract after a spec change with COVEL_UPDATE_SPEC_EXTRACT=1 (then review the
diff: every changed line is a field whose schema needs the same change).
"""

from __future__ import annotations

import os

import pytest


def test_the_extract_equals_the_spec_page(spec_tools):
    if not spec_tools.page.is_file():
        pytest.skip(f"the spec page is not on this machine ({spec_tools.page}); set COVEL_SPEC_DIR")
    fresh = spec_tools.dump(spec_tools.parse(spec_tools.page.read_text(encoding="utf-8")))
    if os.environ.get("COVEL_UPDATE_SPEC_EXTRACT") == "1":
        spec_tools.extract.write_text(fresh, encoding="utf-8")
    assert spec_tools.extract.read_text(encoding="utf-8") == fresh, (
        f"{spec_tools.extract.name} differs from {spec_tools.page}; rerun with COVEL_UPDATE_SPEC_EXTRACT=1"
    )


def test_the_parser_reads_forms_defaults_and_required_flags(spec_tools):
    page = (
        "Intro line\n\nsome.path[] (form 2 of 3)\n\nField\tType\tRequired\tDescription\n"
        'a\t"x" or "y"\tyes\tPicks one. Defaults to x. Default: "x".\n'
        "b\tinteger\tno\tA count.\n\nnext\n\nField\tType\tRequired\tDescription\n"
        'c\tlist of string\tno\tNames. Default: ["n"].\n'
    )
    assert spec_tools.parse(page) == [
        {
            "heading": "some.path[] (form 2 of 3)",
            "rows": [
                {
                    "field": "a",
                    "type": '"x" or "y"',
                    "required": True,
                    "says_default": True,
                    "default": "x",
                },
                {"field": "b", "type": "integer", "required": False, "says_default": False},
            ],
        },
        {
            "heading": "next",
            "rows": [
                {
                    "field": "c",
                    "type": "list of string",
                    "required": False,
                    "says_default": True,
                    "default": ["n"],
                }
            ],
        },
    ]
