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
