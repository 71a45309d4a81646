"""contributes.data.*.authoring: the example is checked by the namespace schema, and
source.path is one of the forms the spec defines and names nothing the kernel owns."""

from __future__ import annotations

import json
from typing import Any

import pytest

from catalogue.manifest import Issue, LoadResult, load_package
from catalogue.manifest.rules import MAX_EXAMPLE_ERRORS, kernel_owned, source_path_form

from .conftest import PackageFactory, put

P = "PLUGIN.md"
AUTHORING = "/contributes/data/facts/authoring"
EXAMPLE = "examples/facts.json"


def the_error(result: LoadResult) -> Issue:
    assert len(result.errors) == 1, [str(e) for e in result.errors]
    return result.errors[0]


def with_example(
    make_package: PackageFactory, base: dict[str, Any], example: Any, **files: str
) -> LoadResult:
    put(base, AUTHORING, {"title": "Facts", "example": f"./{EXAMPLE}"})
    text = example if isinstance(example, str) else json.dumps(example)
    return load_package(make_package(base, files={EXAMPLE: text, **files}))


# ---------------------------------------------------------------- the example


def test_a_valid_example_passes(make_package: PackageFactory, base: dict[str, Any]) -> None:
    records = [{"id": "gate", "text": "Locked at dusk."}, {"id": "ferry", "text": "Two silver."}]
    result = with_example(make_package, base, records)
    assert result.ok, [str(e) for e in result.errors]


def test_each_record_of_the_example_is_checked(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    records = [{"id": "gate", "text": "Locked at dusk."}, {"id": "ferry", "text": 5}]
    issue = the_error(with_example(make_package, base, records))
    assert (issue.file, issue.path, issue.code) == (
        P,
        f"{AUTHORING}/example",
        "authoring-example-invalid",
    )
    # The file, the field inside it, and the rule it breaks.
    assert EXAMPLE in issue.message
    assert "at /1/text" in issue.message
    assert "rule 'type'" in issue.message and "5 is not of type 'string'" in issue.message
    assert "schemas/note.schema.json" in issue.message


def test_an_example_that_is_one_record_is_checked_as_one(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    issue = the_error(with_example(make_package, base, {"text": "No id."}))
    assert issue.code == "authoring-example-invalid"
    assert "at / " in issue.message and "rule 'required'" in issue.message
    assert "'id' is a required property" in issue.message


def test_an_example_that_is_not_json_is_refused(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    issue = the_error(with_example(make_package, base, "[{'id': 'gate'}]"))
    assert (issue.path, issue.code) == (f"{AUTHORING}/example", "authoring-example-invalid")
    assert f"the example {EXAMPLE} is not valid JSON" in issue.message


def test_many_errors_are_capped(make_package: PackageFactory, base: dict[str, Any]) -> None:
    records = [{"id": i, "text": i} for i in range(10)]
    result = with_example(make_package, base, records)
    assert len(result.errors) == MAX_EXAMPLE_ERRORS + 1
    assert result.errors[-1].message.endswith(f"has {20 - MAX_EXAMPLE_ERRORS} more errors")


def test_references_inside_the_schema_are_followed(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    schema = {
        "$defs": {"text": {"type": "string", "maxLength": 5}},
        "type": "object",
        "properties": {"text": {"$ref": "#/$defs/text"}},
    }
    put(base, "/contributes/data/facts/schema", "./schemas/facts.schema.json")
    result = with_example(
        make_package,
        base,
        [{"text": "far too long"}],
        **{"schemas/facts.schema.json": json.dumps(schema)},
    )
    issue = the_error(result)
    assert "at /0/text" in issue.message and "rule 'maxLength'" in issue.message


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"$ref": "https://example.com/fact.json"}, "has a $ref outside the file"),
        ({"$ref": "./fact.schema.json"}, "has a $ref outside the file"),
        ({"type": "record"}, "is not a valid JSON Schema"),
        ({"type": "string", "pattern": "("}, "is not a valid JSON Schema"),
        ([1, 2], "is not a JSON Schema (an object)"),
        ({"$ref": "#"}, "refers to itself without end"),
    ],
)
def test_an_example_whose_schema_cannot_be_used_is_reported(
    make_package: PackageFactory, base: dict[str, Any], schema: Any, reason: str
) -> None:
    """The loader never fetches a schema: an example it cannot check is an error, not a pass."""
    put(base, "/contributes/data/facts/schema", "./schemas/facts.schema.json")
    result = with_example(
        make_package,
        base,
        [{"id": "gate", "text": "Locked."}],
        **{"schemas/facts.schema.json": json.dumps(schema)},
    )
    unchecked = [e for e in result.errors if e.file == P]
    assert len(unchecked) == 1, [str(e) for e in result.errors]
    issue = unchecked[0]
    assert (issue.path, issue.code) == (f"{AUTHORING}/example", "authoring-example-unchecked")
    assert f"the example {EXAMPLE} cannot be checked" in issue.message
    assert "schemas/facts.schema.json" in issue.message and reason in issue.message
    # The schema file itself is judged too (catalogue/manifest/schema_files.py), on its own line.
    (own,) = [e for e in result.errors if e.file == "schemas/facts.schema.json"]
    assert own.code.startswith("schema-"), str(own)


# ---------------------------------------------------------------- source.path


@pytest.mark.parametrize(
    ("path", "form"),
    [
        ("data/quests.yaml", "file"),
        ("data/quests.yml", "file"),
        ("data/quests.json", "file"),
        ("./data/quests.yaml", "file"),
        ("quests.yaml", "file"),
        (".quests.yaml", "file"),  # a leading dot is part of the name
        (".world.yaml", "file"),  # so this is not world.yaml
        ("./.world.yaml", "file"),
        ("data/rules/*.yaml", "files"),
        ("data/rules/*.json", "files"),
        ("media/creatures", "media"),
        ("media/creatures/", "media"),
    ],
)
def test_source_paths_the_spec_defines(
    make_package: PackageFactory, base: dict[str, Any], path: str, form: str
) -> None:
    assert source_path_form(path) == form
    put(base, AUTHORING, {"title": "Facts", "source": {"path": path}})
    result = load_package(make_package(base))
    assert result.ok, [str(e) for e in result.errors]


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/data/quests.yaml", "must be relative to the world package"),
        ("~/quests.yaml", "must be relative to the world package"),
        ("C:/quests.yaml", "must be relative to the world package"),
        ("https://example.com/q.yaml", "must be relative to the world package"),
        ("data\\quests.yaml", "must separate folders with /"),
        ("../quests.yaml", "may not have empty, . or .. parts"),
        ("data/../../quests.yaml", "may not have empty, . or .. parts"),
        ("data//quests.yaml", "may not have empty, . or .. parts"),
        ("data/./quests.yaml", "may not have empty, . or .. parts"),
        ("data/quests.txt", "must end in .yaml, .yml or .json"),
        ("data/quests.YAML", "must end in .yaml, .yml or .json"),
        ("data/quests.yaml/", "must end in .yaml, .yml or .json"),
        ("data/*", "uses a wildcard the spec does not define"),
        ("*.yaml", "uses a wildcard the spec does not define"),
        ("data/**/*.yaml", "uses a wildcard the spec does not define"),
        ("data/*/quests.yaml", "uses a wildcard the spec does not define"),
        ("data/q*.yaml", "uses a wildcard the spec does not define"),
        ("data/*.txt", "uses a wildcard the spec does not define"),
        ("data/quest?.yaml", "uses a wildcard the spec does not define"),
        ("data/{a,b}.yaml", "uses a wildcard the spec does not define"),
        ("data/rules/*.yaml/", "uses a wildcard the spec does not define"),
    ],
)
def test_source_paths_the_spec_does_not_define_are_refused(
    make_package: PackageFactory, base: dict[str, Any], path: str, reason: str
) -> None:
    put(base, AUTHORING, {"title": "Facts", "source": {"path": path}})
    issue = the_error(load_package(make_package(base)))
    assert (issue.file, issue.path, issue.code) == (
        P,
        f"{AUTHORING}/source/path",
        "authoring-source-path-invalid",
    )
    assert repr(path) in issue.message and reason in issue.message


@pytest.mark.parametrize(
    ("path", "owned"),
    [
        ("world.yaml", "world.yaml"),
        ("./world.yaml", "world.yaml"),
        ("data/lorebook.yaml", "data/lorebook.yaml"),
        ("data/lorebook.zh-CN.yaml", "an edition of data/lorebook.yaml"),
        ("characters/characters.json", "characters/characters.json"),
        ("media/gallery", "media/gallery/"),
        ("media/gallery/", "media/gallery/"),
        ("media/gallery/extra", "media/gallery/"),
        ("media/gallery/*.json", "media/gallery/"),
        # A wildcard or a media directory names every path it covers.
        ("data/*.yaml", "data/world.data.yaml"),
        ("characters/*.json", "characters/characters.json"),
        ("media", "media/gallery.json"),
    ],
)
def test_paths_the_kernel_owns_are_refused(
    make_package: PackageFactory, base: dict[str, Any], path: str, owned: str
) -> None:
    put(base, AUTHORING, {"title": "Facts", "source": {"path": path}})
    issue = the_error(load_package(make_package(base)))
    assert (issue.file, issue.path, issue.code) == (
        P,
        f"{AUTHORING}/source/path",
        "authoring-source-reserved",
    )
    assert f"{path!r} names {owned}, which the kernel" in issue.message


@pytest.mark.parametrize(
    "path", [".world.yaml", "..world.yaml", "data/.lorebook.yaml", "data/*.yml", "media/scenes"]
)
def test_names_that_only_look_like_kernel_paths_are_free(path: str) -> None:
    """Only the prefix "./" is dropped; a leading dot belongs to the file name."""
    assert kernel_owned(path) is None


def test_generate_judges_the_source_by_its_form(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    """A hidden-looking file is a file, not a media directory; a bad path is reported once."""
    files = {EXAMPLE: json.dumps([{"id": "gate", "text": "Locked."}])}
    authoring = {"title": "Facts", "generate": "offer", "example": f"./{EXAMPLE}"}
    put(base, AUTHORING, {**authoring, "source": {"path": "data/.facts.yaml"}})
    assert load_package(make_package(base, files=files)).ok
    put(base, AUTHORING, {**authoring, "source": {"path": "data/facts.txt"}})
    issue = the_error(load_package(make_package(base, files=files, name="bad")))
    assert issue.code == "authoring-source-path-invalid"
