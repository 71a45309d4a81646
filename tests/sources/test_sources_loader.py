"""The strict plugin.toml loader: one test per rule and per refusal, each at its path."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from catalogue.manifest.types import Issue
from sources.manifest import check_manifest, load_source_plugin, view_id_clashes
from tests.sources.conftest import EXAMPLE, PluginWriter, example_manifest, minimal_manifest

Manifest = dict[str, Any]


def issues(result: Any) -> set[tuple[str, str]]:
    return {(i.path, i.code) for i in result.errors}


def load_changed(write_plugin: PluginWriter, change: Callable[[Manifest], Any]) -> Any:
    data = example_manifest()
    change(data)
    return load_source_plugin(write_plugin(data, folder="localfeed"))


def test_the_example_plugin_loads_clean() -> None:
    result = load_source_plugin(EXAMPLE)
    assert result.ok, [str(e) for e in result.errors]
    assert result.errors == () and result.warnings == ()
    assert result.plugin_id == "localfeed"
    assert len(result.content_hash) == 64
    jobs = {j.name: j for j in result.manifest.jobs}
    assert jobs["ingest"].every_ns == 300 * 10**9 and jobs["ingest"].retry_ns == 30 * 10**9
    assert jobs["sweep"].every_from == "sweep.fast" and jobs["sweep"].timeout_ns is None


def test_the_spec_pages_example_loads(write_plugin: PluginWriter) -> None:
    result = load_source_plugin(write_plugin(minimal_manifest()))
    assert result.ok, [str(e) for e in result.errors]


def test_defaults_are_filled_in_the_normalised_manifest(write_plugin: PluginWriter) -> None:
    result = load_source_plugin(write_plugin(minimal_manifest()))
    source = result.manifest.data["source"]
    assert source["codec"]["fold_case"] is False and source["codec"]["label"] == ""
    assert source["facts"][0]["untrusted"] is False and source["facts"][0]["slots"] == ()
    assert source["jobs"][0]["timeout"] == "" and source["notify"] == ()


def _at(data: Manifest, path: tuple[str | int, ...]) -> dict[str, Any]:
    node: Any = data
    for part in path:
        node = node[part]
    return node


TABLES = [
    (),
    ("source",),
    ("source", "codec"),
    ("source", "facts", 0),
    ("source", "effects", 0),
    ("source", "events", 0),
    ("source", "roles", 0),
    ("source", "deliveries", 0),
    ("source", "draft_kinds", 0),
    ("source", "signals", 0),
    ("source", "predicates", 0),
    ("source", "marks", 0),
    ("source", "situations", 0),
    ("source", "jobs", 0),
    ("source", "ui"),
    ("source", "ui", "views", 0),
    ("source", "ui", "facets", 0),
    ("source", "ui", "facets", 1, "buckets", 0),
    ("source", "ui", "menubar", 0),
    ("source", "ui", "keys", 0),
    ("source", "commands", 0),
    ("source", "tools", 0),
    ("source", "tools", 0, "answers", 0),
    ("source", "tools", 0, "answers", 0, "fields", 0),
]


@pytest.mark.parametrize("table", TABLES, ids=lambda t: "/".join(map(str, t)) or "top")
def test_it_refuses_an_unknown_key_at_every_depth(write_plugin: PluginWriter, table: tuple) -> None:
    result = load_changed(write_plugin, lambda d: _at(d, table).__setitem__("colour", "blue"))
    pointer = "".join(f"/{p}" for p in table) + "/colour"
    assert issues(result) == {(pointer, "unknown-key")}
    assert "colour" in result.errors[0].message and result.errors[0].file == "plugin.toml"
    assert not result.ok and result.manifest is None


REQUIRED = [
    ((), "id"),
    ((), "kinds"),
    ((), "protocol"),
    (("source",), "name"),
    (("source",), "codec"),
    (("source",), "slot"),
    (("source", "codec"), "keys"),
    (("source", "facts", 0), "name"),
    (("source", "facts", 0), "type"),
    (("source", "facts", 0), "doc"),
    (("source", "effects", 0), "name"),
    (("source", "effects", 0), "applies"),
    (("source", "effects", 0), "doc"),
    (("source", "events", 0), "name"),
    (("source", "events", 0), "doc"),
    (("source", "roles", 0), "name"),
    (("source", "roles", 0), "doc"),
    (("source", "deliveries", 1), "name"),
    (("source", "draft_kinds", 0), "name"),
    (("source", "signals", 0), "name"),
    (("source", "signals", 0), "doc"),
    (("source", "predicates", 0), "name"),
    (("source", "predicates", 0), "doc"),
    (("source", "predicates", 0), "facts"),
    (("source", "marks", 0), "name"),
    (("source", "marks", 0), "doc"),
    (("source", "situations", 0), "name"),
    (("source", "situations", 0), "doc"),
    (("source", "jobs", 0), "name"),
    (("source", "jobs", 0), "every"),
    (("source", "ui", "views", 1), "id"),
    (("source", "ui", "facets", 1), "id"),
    (("source", "ui", "facets", 1, "buckets", 0), "id"),
    (("source", "ui", "menubar", 0), "id"),
    (("source", "ui", "menubar", 0), "view"),
    (("source", "ui", "keys", 0), "key"),
    (("source", "ui", "keys", 0), "action"),
    (("source", "commands", 0), "name"),
    (("source", "tools", 0), "name"),
    (("source", "tools", 0), "doc"),
    (("source", "tools", 0), "input"),
    (("source", "tools", 0, "answers", 0), "name"),
    (("source", "tools", 0, "answers", 0), "doc"),
    (("source", "tools", 0, "answers", 0, "fields", 0), "name"),
]


@pytest.mark.parametrize(
    ("table", "key"), REQUIRED, ids=lambda v: "/".join(map(str, v)) if isinstance(v, tuple) else v
)
def test_it_refuses_a_missing_required_key(
    write_plugin: PluginWriter, table: tuple, key: str
) -> None:
    result = load_changed(write_plugin, lambda d: _at(d, table).pop(key))
    pointer = "".join(f"/{p}" for p in table) + f"/{key}"
    assert (pointer, "required") in issues(result)
    assert any(key in e.message and "required" in e.message for e in result.errors)


TYPES = [
    ("/protocol", lambda d: d.__setitem__("protocol", "1")),
    ("/protocol", lambda d: d.__setitem__("protocol", True)),
    ("/protocol", lambda d: d.__setitem__("protocol", 1.0)),
    ("/id", lambda d: d.__setitem__("id", 7)),
    ("/kinds", lambda d: d.__setitem__("kinds", "source")),
    ("/source", lambda d: d.__setitem__("source", "everything")),
    ("/source/codec/fold_case", lambda d: d["source"]["codec"].__setitem__("fold_case", "yes")),
    ("/source/codec/keys/1", lambda d: d["source"]["codec"]["keys"].__setitem__(1, 5)),
    (
        "/source/codec/fields/number",
        lambda d: d["source"]["codec"]["fields"].__setitem__("number", 1),
    ),
    ("/source/jobs/0/every", lambda d: d["source"]["jobs"][0].__setitem__("every", 300)),
    ("/source/situations/0/rank", lambda d: d["source"]["situations"][0].__setitem__("rank", 1.5)),
    ("/source/ui/views/0/order", lambda d: d["source"]["ui"]["views"][0].__setitem__("order", "1")),
    ("/source/facts", lambda d: d["source"].__setitem__("facts", {"name": "item.x"})),
    (
        "/source/events/0/verdicts/APPROVED",
        lambda d: d["source"]["events"][0]["verdicts"].__setitem__("APPROVED", True),
    ),
    ("/source/row_kinds/0", lambda d: d["source"].__setitem__("row_kinds", [1])),
]


@pytest.mark.parametrize(("pointer", "change"), TYPES, ids=[t[0] for t in TYPES])
def test_it_refuses_a_value_of_the_wrong_type(
    write_plugin: PluginWriter, pointer: str, change: Callable
) -> None:
    result = load_changed(write_plugin, change)
    assert (pointer, "type") in issues(result), [str(e) for e in result.errors]


ENUMS = [
    ("/kinds/0", lambda d: d.__setitem__("kinds", ["sink"])),
    ("/source/facts/0/type", lambda d: d["source"]["facts"][0].__setitem__("type", "float")),
    ("/source/facts/0/slots/0", lambda d: d["source"]["facts"][0].__setitem__("slots", ["row"])),
    (
        "/source/effects/0/applies/1",
        lambda d: d["source"]["effects"][0].__setitem__("applies", ["turn", "post"]),
    ),
    (
        "/source/events/0/resolves",
        lambda d: d["source"]["events"][0].__setitem__("resolves", "open"),
    ),
    (
        "/source/events/0/verdicts/APPROVED",
        lambda d: d["source"]["events"][0]["verdicts"].__setitem__("APPROVED", "LGTM"),
    ),
    (
        "/source/ui/facets/0/sort",
        lambda d: d["source"]["ui"]["facets"][0].__setitem__("sort", "size"),
    ),
    ("/source/ui/facets/0/sort", lambda d: d["source"]["ui"]["facets"][0].__setitem__("sort", "")),
    (
        "/source/ui/facets/1/match",
        lambda d: d["source"]["ui"]["facets"][1].__setitem__("match", "regex"),
    ),
    (
        "/source/ui/views/0/surfaces/0",
        lambda d: d["source"]["ui"]["views"][0].__setitem__("surfaces", ["phone"]),
    ),
    (
        "/source/ui/keys/1/surface",
        lambda d: d["source"]["ui"]["keys"][1].__setitem__("surface", "desktop"),
    ),
    ("/source/notify/0", lambda d: d["source"].__setitem__("notify", ["weather"])),
    ("/source/tools/0/posts", lambda d: d["source"]["tools"][0].__setitem__("posts", "later")),
]


@pytest.mark.parametrize(
    ("pointer", "change"), ENUMS, ids=[f"{i}:{t[0]}" for i, t in enumerate(ENUMS)]
)
def test_it_refuses_a_value_outside_its_enum(
    write_plugin: PluginWriter, pointer: str, change: Callable
) -> None:
    result = load_changed(write_plugin, change)
    assert (pointer, "enum") in issues(result), [str(e) for e in result.errors]
    assert "must be one of" in next(e.message for e in result.errors if e.path == pointer)


@pytest.mark.parametrize(
    ("table", "key"),
    [
        (("source", "ui", "facets", 1), "match"),
        (("source", "ui", "keys", 1), "surface"),
        (("source", "tools", 0), "posts"),
    ],
)
def test_an_empty_value_is_accepted_where_the_spec_gives_it_a_meaning(
    write_plugin: PluginWriter, table: tuple, key: str
) -> None:
    result = load_changed(write_plugin, lambda d: _at(d, table).__setitem__(key, ""))
    assert result.ok, [str(e) for e in result.errors]


def test_it_refuses_a_repeated_enum_value(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"].__setitem__("notify", ["marks", "marks"])
    )
    assert issues(result) == {("/source/notify/1", "duplicate")}


def test_it_refuses_two_entries_with_one_name(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"]["jobs"][1].__setitem__("name", "ingest")
    )
    assert issues(result) == {("/source/jobs/1/name", "duplicate")}


def test_it_refuses_one_key_bound_twice_on_a_surface(write_plugin: PluginWriter) -> None:
    def change(d: Manifest) -> None:
        d["source"]["ui"]["keys"].append({"key": "c", "action": "comment", "surface": "tui"})

    assert issues(load_changed(write_plugin, change)) == {("/source/ui/keys/2/key", "duplicate")}
    # The same key on different surfaces is fine.
    ok = load_changed(
        write_plugin,
        lambda d: d["source"]["ui"]["keys"].append({"key": "c", "action": "x", "surface": "web"}),
    )
    assert ok.ok


# --- top-level rules --------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["Pulls", "pulls.v2", "", "a" * 33, "pull requests", "pülls"])
def test_it_refuses_an_id_outside_its_alphabet(write_plugin: PluginWriter, bad: str) -> None:
    data = minimal_manifest(bad)
    result = load_source_plugin(write_plugin(data, folder="somewhere"))
    assert ("/id", "id-format") in issues(result)


def test_it_accepts_an_id_of_32_characters(write_plugin: PluginWriter) -> None:
    plugin_id = "a-b_c" + "9" * 27
    result = load_source_plugin(write_plugin(minimal_manifest(plugin_id)))
    assert result.ok and result.plugin_id == plugin_id


def test_it_refuses_an_id_that_is_not_its_folders_name(write_plugin: PluginWriter) -> None:
    result = load_source_plugin(write_plugin(minimal_manifest("pulls"), folder="prs"))
    assert issues(result) == {("/id", "id-mismatch")}


def test_it_refuses_a_protocol_the_host_does_not_speak(write_plugin: PluginWriter) -> None:
    data = minimal_manifest()
    data["protocol"] = 2
    assert issues(load_source_plugin(write_plugin(data))) == {("/protocol", "protocol-unsupported")}


def test_it_refuses_a_kind_without_its_table(write_plugin: PluginWriter) -> None:
    data = minimal_manifest()
    del data["source"]
    assert issues(load_source_plugin(write_plugin(data))) == {("/source", "kind-table")}


def test_it_refuses_a_source_table_its_kinds_do_not_list(write_plugin: PluginWriter) -> None:
    data = minimal_manifest()
    data["kinds"] = []
    assert issues(load_source_plugin(write_plugin(data))) == {
        ("/kinds", "kinds-empty"),
        ("/source", "kind-table"),
    }


def test_it_reports_a_toml_syntax_error(write_plugin: PluginWriter) -> None:
    result = load_source_plugin(write_plugin('id = "pulls"\nkinds = [source]\n', folder="pulls"))
    assert issues(result) == {("", "toml-syntax")}
    assert "plugin.toml is not valid TOML" in result.errors[0].message


def test_it_reports_a_folder_without_plugin_toml(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = load_source_plugin(tmp_path / "empty")
    assert issues(result) == {("", "missing-manifest")} and result.plugin_id == "empty"


def test_it_collects_every_error_in_one_pass(write_plugin: PluginWriter) -> None:
    def change(d: Manifest) -> None:
        d["protocol"] = "one"
        d["source"]["codec"]["fields"]["number"] = "[1-9"
        d["source"]["jobs"][0]["every"] = "5d"
        d["source"]["facts"][0]["type"] = "float"
        d["source"]["marks"][0]["name"] = "has space"
        d["source"]["default_delivery"] = "pigeon"

    result = load_changed(write_plugin, change)
    assert issues(result) == {
        ("/protocol", "type"),
        ("/source/codec/fields/number", "regex"),
        ("/source/jobs/0/every", "duration"),
        ("/source/facts/0/type", "enum"),
        ("/source/marks/0/name", "mark-name"),
        ("/source/default_delivery", "unknown-delivery"),
    }
    assert all(isinstance(e, Issue) for e in result.errors)


def test_an_issue_prints_file_path_message_and_code(write_plugin: PluginWriter) -> None:
    result = load_changed(write_plugin, lambda d: d["source"]["jobs"][0].__setitem__("every", "1d"))
    assert str(result.errors[0]) == (
        "plugin.toml:/source/jobs/0/every source.jobs[0].every is not a Go duration: "
        'time: unknown unit "d" in duration "1d" [duration]'
    )


def test_it_warns_when_the_binary_is_missing(write_plugin: PluginWriter) -> None:
    result = load_source_plugin(write_plugin(minimal_manifest(), binary=False))
    assert result.ok and [w.code for w in result.warnings] == ["binary-missing"]


# --- codec rules ------------------------------------------------------------------------------
def test_it_compiles_field_patterns_as_re2_and_reports_errors_at_their_path(
    write_plugin: PluginWriter,
) -> None:
    # A lookbehind is Python syntax that Go's RE2 refuses.
    result = load_changed(
        write_plugin, lambda d: d["source"]["codec"]["fields"].__setitem__("number", "(?<=#)[0-9]+")
    )
    assert issues(result) == {("/source/codec/fields/number", "regex")}
    assert "RE2" in result.errors[0].message


def test_it_reports_a_backreference_as_re2_does(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"]["codec"].__setitem__("targets", r"(a)\1")
    )
    assert issues(result) == {("/source/codec/targets", "regex")}


GO_REFUSES = [
    # (pointer, change, what Go's message names): RE2 in C++ compiles each of these.
    (
        "/source/codec/fields/number",
        lambda d: d["source"]["codec"]["fields"].__setitem__("number", r"[1-9]\C*"),
        "\\C",
    ),
    (
        "/source/codec/targets",
        lambda d: d["source"]["codec"].__setitem__("targets", r"^[a-z]+\C$"),
        "\\C",
    ),
    (
        "/source/codec/fields/number",
        lambda d: d["source"]["codec"]["fields"].__setitem__("number", "(?P<nüm>[1-9])[0-9]*"),
        "(?P<nüm>",
    ),
]


@pytest.mark.parametrize(
    ("pointer", "change", "named"), GO_REFUSES, ids=["field", "targets", "name"]
)
def test_it_refuses_syntax_only_cpp_re2_accepts(
    write_plugin: PluginWriter, pointer: str, change: Callable, named: str
) -> None:
    result = load_changed(write_plugin, change)
    assert issues(result) == {(pointer, "regex")}
    line = str(result.errors[0])
    assert line.startswith(f"plugin.toml:{pointer} ") and line.endswith("[regex]")
    assert named in line and "Go" in line


@pytest.mark.parametrize(
    "pattern",
    [r"\\C[1-9]*", r"[1-9]\Q\C\E", r"[\\C1-9]+", r"(?P<num_1>[1-9])[0-9]*", r"[[:digit:]C]+"],
)
def test_an_escaped_backslash_or_quoted_c_is_go_syntax(
    write_plugin: PluginWriter, pattern: str
) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"]["codec"]["fields"].__setitem__("number", pattern)
    )
    assert result.ok, [str(e) for e in result.errors]


def test_a_patterns_own_named_group_does_not_confuse_the_fields(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin,
        lambda d: d["source"]["codec"]["fields"].__setitem__("number", "(?P<feed>[1-9])[0-9]*"),
    )
    assert result.ok
    resolved = result.manifest.codec().resolve_key("news#42")
    assert resolved.fields == {"feed": "news", "number": "42"}


def test_it_refuses_an_empty_field_pattern(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"]["codec"]["fields"].__setitem__("number", "")
    )
    assert issues(result) == {("/source/codec/fields/number", "regex")}


@pytest.mark.parametrize(
    "template",
    [
        "{feed",
        "feed}#{number}",
        "{1feed}#{number}",
        "{feed}{number}",
        "{feed}#{feed}",
        "no fields",
        "{}",
    ],
)
def test_it_refuses_a_malformed_key_template(write_plugin: PluginWriter, template: str) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"]["codec"]["keys"].__setitem__(1, template)
    )
    assert ("/source/codec/keys/1", "template") in issues(result)


@pytest.mark.parametrize(
    ("label", "shown"),
    [
        ("{feed} #{number} of {feed}", "news #42 of news"),
        ("{feed}{number}", "news42"),
        ("A local item", "A local item"),
    ],
)
def test_a_label_may_repeat_touch_or_lack_fields(
    write_plugin: PluginWriter, label: str, shown: str
) -> None:
    # Only key templates are read back into fields; a label is only filled in.
    result = load_changed(write_plugin, lambda d: d["source"]["codec"].__setitem__("label", label))
    assert result.ok, [str(e) for e in result.errors]
    assert result.manifest.codec().resolve_key("news#42").label == shown


@pytest.mark.parametrize("label", ["{feed", "item {1feed}", "{}"])
def test_it_refuses_a_label_that_is_not_a_template(write_plugin: PluginWriter, label: str) -> None:
    result = load_changed(write_plugin, lambda d: d["source"]["codec"].__setitem__("label", label))
    assert issues(result) == {("/source/codec/label", "template")}
    assert str(result.errors[0]).startswith("plugin.toml:/source/codec/label codec.label")


def test_it_refuses_an_empty_key_list(write_plugin: PluginWriter) -> None:
    result = load_changed(write_plugin, lambda d: d["source"]["codec"].__setitem__("keys", []))
    assert ("/source/codec/keys", "required") in issues(result)


def test_it_refuses_a_url_template_no_key_template_matches(write_plugin: PluginWriter) -> None:
    def change(d: Manifest) -> None:
        d["source"]["codec"]["urls"].append("https://feeds.example/{feed}/users/{user}")

    result = load_changed(write_plugin, change)
    assert issues(result) == {("/source/codec/urls/2", "url-key")}
    assert str(result.errors[0]).startswith("plugin.toml:/source/codec/urls/2 codec.urls[2]")
    assert str(result.errors[0]).endswith("[url-key]")


def test_a_url_template_may_use_some_of_a_keys_fields(write_plugin: PluginWriter) -> None:
    # "the first whose fields a key has is its address": a pull's address may be its repo's.
    data = minimal_manifest()
    data["source"]["codec"]["urls"] = ["https://pulls.example/{owner}/{repo}"]
    result = load_source_plugin(write_plugin(data))
    assert result.ok, [str(e) for e in result.errors]
    codec = result.manifest.codec()
    assert codec.resolve_key("ackness/covel#7").url == "https://pulls.example/ackness/covel"


def test_a_url_template_after_a_bad_one_is_judged_at_its_own_index(
    write_plugin: PluginWriter,
) -> None:
    def change(d: Manifest) -> None:
        d["source"]["codec"]["urls"] = ["https://feeds.example/{feed", "https://x.example/{user}"]

    assert issues(load_changed(write_plugin, change)) == {
        ("/source/codec/urls/0", "template"),
        ("/source/codec/urls/1", "url-key"),
    }


def test_it_refuses_a_url_template_that_is_not_a_web_address(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"]["codec"]["urls"].__setitem__(1, "feeds.example/{feed}")
    )
    assert issues(result) == {("/source/codec/urls/1", "template")}


def test_it_warns_about_a_field_pattern_no_template_uses(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"]["codec"]["fields"].__setitem__("owner", "[a-z]+")
    )
    assert result.ok and [(w.path, w.code) for w in result.warnings] == [
        ("/source/codec/fields/owner", "unused-field")
    ]


# --- cross-references -------------------------------------------------------------------------
def test_a_fact_name_starts_with_the_slot(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"]["facts"][3].__setitem__("name", "title")
    )
    assert issues(result) == {("/source/facts/3/name", "fact-slot")}


@pytest.mark.parametrize("name", ["item", "item.", "items.state", "itemstate"])
def test_a_fact_name_is_the_slot_a_dot_and_a_name(write_plugin: PluginWriter, name: str) -> None:
    result = load_changed(write_plugin, lambda d: d["source"]["facts"][3].__setitem__("name", name))
    assert ("/source/facts/3/name", "fact-slot") in issues(result)


def test_only_a_draft_effect_may_be_silent(write_plugin: PluginWriter) -> None:
    def change(d: Manifest) -> None:
        d["source"]["effects"][0].update(applies=["turn"], silent=True)

    result = load_changed(write_plugin, change)
    assert issues(result) == {("/source/effects/0/silent", "effect-silent")}
    line = str(result.errors[0])
    assert line.startswith("plugin.toml:/source/effects/0/silent effect 'close' is silent")
    assert line.endswith("[effect-silent]")


def test_an_effect_on_turns_and_drafts_may_be_silent(write_plugin: PluginWriter) -> None:
    result = load_changed(write_plugin, lambda d: d["source"]["effects"][0].update(silent=True))
    assert result.ok, [str(e) for e in result.errors]


def test_a_turn_effect_may_say_silent_false(write_plugin: PluginWriter) -> None:
    def change(d: Manifest) -> None:
        d["source"]["effects"][0].update(applies=["turn"], silent=False)

    assert load_changed(write_plugin, change).ok


def test_default_delivery_names_a_declared_delivery(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"].__setitem__("default_delivery", "email")
    )
    assert issues(result) == {("/source/default_delivery", "unknown-delivery")}


def test_a_draft_kinds_delivery_names_a_declared_delivery(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"]["draft_kinds"][1].__setitem__("delivery", "fax")
    )
    assert issues(result) == {("/source/draft_kinds/1/delivery", "unknown-delivery")}


def test_a_draft_kind_without_delivery_needs_a_default_delivery(write_plugin: PluginWriter) -> None:
    result = load_changed(write_plugin, lambda d: d["source"].__setitem__("default_delivery", ""))
    assert issues(result) == {("/source/draft_kinds/0/delivery", "no-delivery")}


def test_language_fact_is_a_declared_fact(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"].__setitem__("language_fact", "item.lang")
    )
    assert issues(result) == {("/source/language_fact", "unknown-fact")}


def test_language_fact_is_a_string_fact(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"].__setitem__("language_fact", "item.members")
    )
    assert issues(result) == {("/source/language_fact", "fact-type")}


def test_members_fact_is_a_declared_fact(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"].__setitem__("members_fact", "item.people")
    )
    assert issues(result) == {("/source/members_fact", "unknown-fact")}


def test_members_fact_is_a_list_fact(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"].__setitem__("members_fact", "item.state")
    )
    assert issues(result) == {("/source/members_fact", "fact-type")}


def test_a_predicates_facts_are_declared(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"]["predicates"][0]["facts"].append("item.heat")
    )
    assert issues(result) == {("/source/predicates/0/facts/2", "unknown-fact")}


def test_every_from_lies_under_config_reads(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"]["jobs"][1].__setitem__("every_from", "items.heat")
    )
    assert issues(result) == {("/source/jobs/1/every_from", "every-from")}


@pytest.mark.parametrize("every_from", ["sweep", "sweep.fast", "sweep.fast.deep"])
def test_every_from_may_be_a_config_read_or_under_one(
    write_plugin: PluginWriter, every_from: str
) -> None:
    assert load_changed(
        write_plugin, lambda d: d["source"]["jobs"][1].__setitem__("every_from", every_from)
    ).ok


def test_every_from_is_not_merely_a_prefix_of_a_config_read(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"]["jobs"][1].__setitem__("every_from", "sweeper")
    )
    assert issues(result) == {("/source/jobs/1/every_from", "every-from")}


def test_config_reads_are_keys_of_the_configuration(write_plugin: PluginWriter) -> None:
    folder = write_plugin(example_manifest(), folder="localfeed")
    assert load_source_plugin(folder, config_keys={"sweep", "sweep.fast"}).ok
    result = load_source_plugin(folder, config_keys={"items", "items.heat"})
    assert issues(result) == {("/source/config_reads/0", "config-key")}
    line = str(result.errors[0])
    assert line.startswith("plugin.toml:/source/config_reads/0 config_reads[0] 'sweep' is not")
    assert line.endswith("is not a key of the configuration [config-key]")


def test_without_a_configuration_config_reads_are_not_looked_up(
    write_plugin: PluginWriter,
) -> None:
    assert load_source_plugin(write_plugin(example_manifest(), folder="localfeed")).ok


@pytest.mark.parametrize("key", ["localfeed", "localfeed.feed"])
def test_config_reads_lie_outside_the_plugins_own_table(
    write_plugin: PluginWriter, key: str
) -> None:
    result = load_changed(write_plugin, lambda d: d["source"]["config_reads"].append(key))
    assert issues(result) == {("/source/config_reads/1", "config-own-table")}
    assert str(result.errors[0]).endswith("[config-own-table]")


def test_a_config_read_is_not_empty(tmp_path: Path) -> None:
    raw = example_manifest()
    raw["source"]["config_reads"] = ["sweep", ""]
    result = check_manifest(raw, folder=tmp_path / "localfeed", config_keys={"sweep"})
    assert ("/source/config_reads/1", "config-key") in issues(result)


def test_facet_rank_needs_sort_rank(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"]["ui"]["facets"][0].__setitem__("sort", "text")
    )
    assert issues(result) == {("/source/ui/facets/0/rank", "facet-rank")}


def test_facet_buckets_need_sort_time(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"]["ui"]["facets"][1].__setitem__("sort", "text")
    )
    assert issues(result) == {("/source/ui/facets/1/buckets", "facet-buckets")}


def test_every_bucket_but_the_last_has_within(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"]["ui"]["facets"][1]["buckets"][1].pop("within")
    )
    assert issues(result) == {("/source/ui/facets/1/buckets/1/within", "bucket-within")}


def test_the_last_bucket_may_have_within_too(write_plugin: PluginWriter) -> None:
    assert load_changed(
        write_plugin,
        lambda d: d["source"]["ui"]["facets"][1]["buckets"][2].__setitem__("within", "8760h"),
    ).ok


def test_buckets_go_youngest_first(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin,
        lambda d: d["source"]["ui"]["facets"][1]["buckets"][1].__setitem__("within", "1h"),
    )
    assert issues(result) == {("/source/ui/facets/1/buckets/1/within", "bucket-order")}


def test_a_bucket_may_reach_into_the_future(write_plugin: PluginWriter) -> None:
    def change(d: Manifest) -> None:
        d["source"]["ui"]["facets"][1]["buckets"].insert(0, {"id": "overdue", "within": "-1h"})

    assert load_changed(write_plugin, change).ok


def test_a_bad_within_is_a_duration_error_at_its_path(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin,
        lambda d: d["source"]["ui"]["facets"][1]["buckets"][0].__setitem__("within", "1 day"),
    )
    assert issues(result) == {("/source/ui/facets/1/buckets/0/within", "duration")}


def test_at_most_one_facet_colors_the_strip(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"]["ui"]["facets"][1].__setitem__("strip", True)
    )
    assert issues(result) == {("/source/ui/facets/1/strip", "facet-strip")}


@pytest.mark.parametrize("field", ["row.", "items.state", "state", "item.nope"])
def test_a_facet_reads_a_row_an_item_or_a_fact(write_plugin: PluginWriter, field: str) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"]["ui"]["facets"][0].__setitem__("field", field)
    )
    if field == "item.nope":
        assert result.ok  # item.<anything> is the item's own field
    else:
        assert issues(result) == {("/source/ui/facets/0/field", "facet-field")}


def test_a_menubar_section_shows_a_declared_view(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"]["ui"]["menubar"][0].__setitem__("view", "inbox")
    )
    assert issues(result) == {("/source/ui/menubar/0/view", "unknown-view")}


@pytest.mark.parametrize(
    "name", ["a/b", "two words", "tab\there", "bell\x07", "nul\x00", "new\nline", "nbsp\u00a0", ""]
)
def test_a_mark_name_has_no_slash_space_or_control_character(
    write_plugin: PluginWriter, name: str
) -> None:
    result = load_changed(write_plugin, lambda d: d["source"]["marks"][0].__setitem__("name", name))
    assert issues(result) == {("/source/marks/0/name", "mark-name")}


def test_a_mark_name_may_use_dots_dashes_and_letters(write_plugin: PluginWriter) -> None:
    assert load_changed(
        write_plugin, lambda d: d["source"]["marks"][0].__setitem__("name", "triaged.v2-é")
    ).ok


def test_the_ui_web_folder_exists_inside_the_plugin(write_plugin: PluginWriter) -> None:
    result = load_changed(write_plugin, lambda d: d["source"]["ui"].__setitem__("web", "site"))
    assert issues(result) == {("/source/ui/web", "ui-web")}


@pytest.mark.parametrize("web", ["..", "../localfeed/../other", "/tmp", "a\x00b", "x" * 5000])
def test_the_ui_web_folder_may_not_leave_the_plugin(write_plugin: PluginWriter, web: str) -> None:
    result = load_changed(write_plugin, lambda d: d["source"]["ui"].__setitem__("web", web))
    assert issues(result) == {("/source/ui/web", "ui-web")}


def test_the_ui_web_folder_may_not_be_a_file(write_plugin: PluginWriter) -> None:
    folder = write_plugin(example_manifest(), folder="localfeed")
    (folder / "page.html").write_text("<p>hi</p>")
    data = example_manifest()
    data["source"]["ui"]["web"] = "page.html"
    result = load_source_plugin(write_plugin(data, folder="localfeed"))
    assert issues(result) == {("/source/ui/web", "ui-web")}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "JSON schema object"),
        ('{"type": "string"}', "describe an object"),
        ('{"type": "object", "properties": 5}', "not a valid JSON schema"),
    ],
)
def test_a_tools_input_is_a_json_schema_of_an_object(
    write_plugin: PluginWriter, text: str, fragment: str
) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"]["tools"][0].__setitem__("input", text)
    )
    assert issues(result) == {("/source/tools/0/input", "tool-input")}
    assert fragment in result.errors[0].message


# --- jobs -------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["every", "timeout", "retry"])
@pytest.mark.parametrize("value", ["5d", "1h30", "fast", "1.5.5s"])
def test_a_job_duration_is_a_go_duration(write_plugin: PluginWriter, key: str, value: str) -> None:
    result = load_changed(write_plugin, lambda d: d["source"]["jobs"][0].__setitem__(key, value))
    assert issues(result) == {(f"/source/jobs/0/{key}", "duration")}


@pytest.mark.parametrize("key", ["every", "timeout", "retry"])
@pytest.mark.parametrize("value", ["0", "-5m"])
def test_a_job_duration_is_more_than_zero(write_plugin: PluginWriter, key: str, value: str) -> None:
    result = load_changed(write_plugin, lambda d: d["source"]["jobs"][0].__setitem__(key, value))
    assert issues(result) == {(f"/source/jobs/0/{key}", "duration-positive")}


def test_an_empty_every_is_refused_but_empty_timeout_and_retry_mean_defaults(
    write_plugin: PluginWriter,
) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"]["jobs"][0].update(every="", timeout="", retry="")
    )
    assert issues(result) == {("/source/jobs/0/every", "required")}


def test_a_retry_longer_than_every_is_a_warning(write_plugin: PluginWriter) -> None:
    result = load_changed(write_plugin, lambda d: d["source"]["jobs"][0].__setitem__("retry", "1h"))
    assert result.ok and [(w.path, w.code) for w in result.warnings] == [
        ("/source/jobs/0/retry", "retry-over-every")
    ]


def test_verdicts_without_answers_asked_turn_are_a_warning(write_plugin: PluginWriter) -> None:
    result = load_changed(
        write_plugin, lambda d: d["source"]["events"][0].__setitem__("answers_asked_turn", False)
    )
    assert result.ok and [w.code for w in result.warnings] == ["verdicts-unused"]


# --- across plugins ---------------------------------------------------------------------------
def test_view_ids_are_unique_across_plugins(write_plugin: PluginWriter) -> None:
    first = load_source_plugin(write_plugin(example_manifest(), folder="localfeed"))
    other = minimal_manifest("pulls")
    other["source"]["ui"] = {"views": [{"id": "pulls-main"}, {"id": "localfeed-summary"}]}
    second = load_source_plugin(write_plugin(other))
    assert first.ok and second.ok
    clashes = view_id_clashes([first, second])
    assert {k: [(i.path, i.code) for i in v] for k, v in clashes.items()} == {
        "localfeed": [("/source/ui/views/1/id", "view-id-taken")],
        "pulls": [("/source/ui/views/1/id", "view-id-taken")],
    }
    assert "pulls" in clashes["localfeed"][0].message


def test_distinct_view_ids_do_not_clash(write_plugin: PluginWriter) -> None:
    first = load_source_plugin(write_plugin(example_manifest(), folder="localfeed"))
    second = load_source_plugin(write_plugin(minimal_manifest("pulls")))
    assert view_id_clashes([first, second]) == {}


def test_the_loader_never_runs_the_binary(write_plugin: PluginWriter, tmp_path: Path) -> None:
    folder = write_plugin(minimal_manifest(), binary=False)
    marker = tmp_path / "ran"
    exe = folder / "pulls"
    exe.write_text(f"#!/bin/sh\ntouch {marker}\n")
    exe.chmod(0o755)
    assert load_source_plugin(folder).ok
    assert not marker.exists() and os.access(exe, os.X_OK)
