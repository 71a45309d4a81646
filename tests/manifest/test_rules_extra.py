"""Rule details: host ranges, URL edge cases, warnings and dataset tool defaults."""

from __future__ import annotations

from typing import Any

import pytest

from catalogue.manifest import load_package
from catalogue.manifest.hostrange import RangeError, parse_range, satisfies
from catalogue.manifest.rules import offered_dataset_tools

from .conftest import PackageFactory, codes, put

P = "PLUGIN.md"


@pytest.mark.parametrize(
    ("version", "range_text", "expected"),
    [
        ("0.1.0", ">=0.0.45", True),
        ("0.1.0", ">=0.1.0 <0.2.0", True),
        ("0.1.0", ">0.1.0", False),
        ("0.1.0", "<=0.1.0", True),
        ("0.1.0", "<0.1.0", False),
        ("0.1.0", "0.1.0", True),
        ("0.1.0", "=0.1.1", False),
        ("0.1.0-beta.1", ">=0.1.0", True),  # pre-release ignored on the host side
        ("0.1.0", "<=0.1.0-rc.2", True),  # and on the range side
        ("1.10.0", ">1.9.0", True),  # numeric, not textual, comparison
        ("0.1.0", ">=0.0.1  <1.0.0", True),  # several spaces
    ],
)
def test_host_range_comparators(version: str, range_text: str, expected: bool) -> None:
    assert satisfies(version, range_text) is expected


@pytest.mark.parametrize(
    "range_text", ["", "~1.2.0", "^1.0.0", ">= 1.0.0", "1.0", ">=1.0.0 || <0.5.0", "latest"]
)
def test_unparsable_ranges(range_text: str) -> None:
    with pytest.raises(RangeError):
        parse_range(range_text)


def test_an_empty_range_is_its_own_error(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    put(base, "/covel", "  ")
    assert codes(load_package(make_package(base))) == [(P, "/covel", "host-range-invalid")]


@pytest.mark.parametrize(
    ("pointer", "value", "code"),
    [
        ("/homepage", "https://example.com:99999/x", "url-invalid"),
        ("/author/url", "https://", "url-invalid"),
        ("/permissions/http/0/origin", "https://api.example.com:notaport", "origin-invalid"),
        ("/permissions/http/0/origin", "https://", "origin-invalid"),
        ("/permissions/http/0/origin", "HTTPS://API.example.com", "origin-not-canonical"),
        ("/permissions/http/0/origin", "https://api.example.com:443", "origin-not-canonical"),
    ],
)
def test_url_and_origin_edge_cases(
    make_package: PackageFactory, base: dict[str, Any], pointer: str, value: str, code: str
) -> None:
    put(base, pointer, value)
    assert codes(load_package(make_package(base))) == [(P, pointer, code)]


def test_an_origin_with_a_port_is_canonical(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    put(base, "/permissions/http/0/origin", "https://api.example.com:8443")
    assert load_package(make_package(base)).ok


def test_an_entry_without_version_warns(make_package: PackageFactory, base: dict[str, Any]) -> None:
    del base["version"]
    result = load_package(make_package(base))
    assert result.ok
    assert [(w.file, w.path, w.code) for w in result.warnings] == [
        (P, "/version", "version-missing")
    ]


@pytest.mark.parametrize(
    ("dataset", "tools"),
    [
        ({}, ["get", "list", "upsert", "update"]),
        ({"ops": ["set"]}, ["get", "list", "upsert"]),
        ({"ops": ["inc", "merge"]}, ["get", "list", "update"]),
        ({"ops": ["set", "delete"]}, ["get", "list", "upsert", "update"]),
        ({"ops": ["set"], "tools": ["get"]}, ["get"]),
    ],
)
def test_dataset_tool_defaults(dataset: dict[str, Any], tools: list[str]) -> None:
    assert offered_dataset_tools(dataset) == tools


def test_a_valid_story_runtime_with_everything(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    """The positive side of several rules at once: nothing here may be reported."""
    put(
        base,
        "/runtime",
        {
            "schedule": {
                "stage": "narrative",
                "needs": [{"contract": "narrative-engine@2", "cardinality": "all"}],
            },
            "io": {
                "visibility": "story",
                "inputs": {
                    "narrative": {
                        "from": {"contract": "narrative-engine@2"},
                        "required": False,
                        "accepts": "contract:narrative-engine@2",
                    },
                    "last": {
                        "from": {"runtime": "notes"},
                        "scope": "committed",
                        "recordAs": "last",
                    },
                },
                "output": {"schema": "./schemas/note.schema.json", "recordAs": "last"},
            },
            "agent": {
                "completion": {"require": "tool-use", "afterTools": ["save-note"]},
                "tools": {
                    "plugin": ["save-note"],
                    "datasets": [{"dataset": "notes", "tools": ["get", "upsert"]}],
                },
                "loop": {
                    "stream": True,
                    "steering": True,
                    "truncation": "accept",
                    "finalizer": {"deadlineReserveMs": 1000},
                },
            },
        },
    )
    result = load_package(make_package(base))
    assert result.ok, [str(e) for e in result.errors]
    rt = result.manifest.runtimes[0]  # type: ignore[union-attr]
    assert rt.data["agent"]["model"] == "story"


def test_listing_a_runtime_output_in_provides_warns(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    put(base, "/runtime/io/output", {"contract": "notes.log@1"})
    put(base, "/provides", ["notes.log@1"])
    result = load_package(make_package(base))
    assert result.ok, result.errors
    assert [(w.path, w.code) for w in result.warnings] == [("/provides/0", "provides-redundant")]
    put(base, "/provides", [{"contract": "notes.log@1", "default": True}])
    marked = load_package(make_package(base, name="marked"))
    assert marked.ok and marked.warnings == ()
    assert marked.manifest is not None
    assert [dict(p) for p in marked.manifest.provides] == [
        {"contract": "notes.log@1", "default": True}
    ]


def test_a_host_version_that_is_not_x_y_z_is_reported(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    result = load_package(make_package(base), host_version="dev")
    assert codes(result) == [(P, "/covel", "host-version-invalid")]
    del base["covel"]
    assert load_package(make_package(base, name="free"), host_version="dev").ok


# ---------------------------------------------------------------- package ids


@pytest.mark.parametrize("package_id", ["a--b", "-a", "a-", "-", "7", "a" * 65, "x" * 100])
def test_any_lowercase_letters_digits_and_hyphens_make_an_id(
    make_package: PackageFactory, base: dict[str, Any], package_id: str
) -> None:
    """The spec says only "lowercase letters, digits and hyphens": no hyphen rule, and no length
    rule below the 100 characters the hub stores."""
    assert load_package(make_package(base, name=package_id)).ok
    put(base, "/id", package_id)
    result = load_package(make_package(base, name=package_id))
    assert result.ok, [str(e) for e in result.errors]
    assert result.manifest is not None and result.manifest.id == package_id


@pytest.mark.parametrize("package_id", ["Notes", "no_tes", "no.tes", "notes\n", ""])
def test_other_characters_are_not_an_id(
    make_package: PackageFactory, base: dict[str, Any], package_id: str
) -> None:
    put(base, "/id", package_id)
    [issue] = load_package(make_package(base)).errors
    assert (issue.file, issue.path, issue.code) == (P, "/id", "id-syntax")
    assert repr(package_id) in issue.message
    assert "lowercase letters, digits and hyphens only" in issue.message


def test_an_id_longer_than_the_hub_stores_is_refused_with_its_length(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    long_id = "x" * 101
    [issue] = load_package(make_package(base, name=long_id)).errors
    assert (issue.file, issue.path, issue.code) == (P, "", "id-too-long")
    assert "101 characters; the hub stores at most 100" in issue.message
    put(base, "/id", long_id)
    [issue] = load_package(make_package(base, name=long_id)).errors
    assert (issue.file, issue.path, issue.code) == (P, "/id", "id-too-long")


def test_the_id_still_equals_the_folder_and_framework_stays_reserved(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    put(base, "/id", "a--b")
    assert codes(load_package(make_package(base, name="a-b"))) == [(P, "/id", "id-mismatch")]
    assert codes(load_package(make_package({**base, "id": "framework"}, name="framework"))) == [
        (P, "/id", "id-reserved")
    ]


# ---------------------------------------------------------------- io.inputs.*.select


@pytest.mark.parametrize("select", ["", "/", "/narrativeOutput", "/a~0b/a~1b/0", "/ /x"])
def test_a_select_that_is_a_json_pointer_passes(
    make_package: PackageFactory, base: dict[str, Any], select: str
) -> None:
    put(base, "/runtime/io/inputs/narrative/select", select)
    assert load_package(make_package(base)).ok


@pytest.mark.parametrize("select", ["narrativeOutput", "/a~2b", "/a~", "~0", "#/narrative"])
def test_a_select_that_is_no_json_pointer_is_refused(
    make_package: PackageFactory, base: dict[str, Any], select: str
) -> None:
    put(base, "/runtime/io/inputs/narrative/select", select)
    [issue] = load_package(make_package(base)).errors
    where = "/runtime/io/inputs/narrative/select"
    assert (issue.file, issue.path, issue.code) == (P, where, "select-not-pointer")
    assert repr(select) in issue.message and "JSON Pointer (RFC 6901)" in issue.message


def test_a_select_where_none_is_allowed_is_reported_once(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    put(base, "/runtime/io/inputs/turn", {"from": {"kernel": "turn-digest@1"}, "select": "x"})
    assert codes(load_package(make_package(base))) == [
        (P, "/runtime/io/inputs/turn/select", "kernel-input-extra-field")
    ]


# ---------------------------------------------------------------- extensions[].watch


def test_a_slot_may_watch_an_undeclared_own_namespace_with_a_warning(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    """Covel's packages watch namespaces they never declare; every namespace is the package's own."""
    slot = {"point": "ui.slot@1", "id": "tray", "slot": "sidebar"}
    # facts is a contributes.data namespace, notes a dataset: both declared, no note.
    put(base, "/contributes/extensions", [{**slot, "watch": ["facts", "notes"]}])
    declared = load_package(make_package(base))
    assert declared.ok and not declared.warnings
    put(base, "/contributes/extensions", [{**slot, "watch": ["facts", "inventory.items"]}])
    result = load_package(make_package(base, name="other"))
    assert result.ok
    [issue] = [w for w in result.warnings if w.code == "namespace-undeclared"]
    assert (issue.file, issue.path) == (P, "/contributes/extensions/0/watch/1")
    assert "'inventory.items'" in issue.message and "contributes.data" in issue.message


# ---------------------------------------------------------------- subagentOnly


def test_a_subagent_has_no_every(make_package: PackageFactory, base: dict[str, Any]) -> None:
    """subagentOnly implies trigger: manual, and every is for auto triggers only."""
    put(base, "/runtime/schedule", {"subagentOnly": True, "every": 3})
    [issue] = load_package(make_package(base)).errors
    assert (issue.file, issue.path, issue.code) == (P, "/runtime/schedule/every", "every-not-auto")
    assert "applies only to auto triggers" in issue.message
    assert "subagentOnly runtime is triggered manually" in issue.message
    put(base, "/runtime/schedule", {"subagentOnly": True})
    assert load_package(make_package(base, name="plain")).ok
