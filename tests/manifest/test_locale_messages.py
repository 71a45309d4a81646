"""Locale files as Covel writes them: a `messages:` catalogue, and event translations matched by position."""

from __future__ import annotations

from typing import Any

from catalogue.manifest import load_package

from .conftest import PackageFactory, codes, put

ZH = "locales/zh-CN.yaml"


def test_a_messages_section_is_covels_catalogue_of_code_text(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    root = make_package(
        base,
        files={
            ZH: (
                "PLUGIN.md:\n  description: 笔记。\n"
                "messages:\n"
                '  "World time: {display}": "世界时间：{display}"\n'
                "  Success: 成功\n"
                '  "shortLabel|Codex": 图鉴\n'
            )
        },
    )
    result = load_package(root)
    assert result.ok, [str(e) for e in result.errors]


def test_a_messages_entry_must_be_a_string_with_the_same_placeholders(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    root = make_package(
        base,
        files={
            ZH: (
                "messages:\n"
                '  "Rolled {n}": "掷出了 {count}"\n'
                "  Nested: {a: b}\n"
                '  "{{count}} entries": "已收录 {{count}} 条"\n'
            )
        },
    )
    result = load_package(root)
    assert codes(result) == [
        (ZH, "/messages/Rolled {n}", "locale-placeholders-differ"),
        (ZH, "/messages/Nested", "locale-messages-invalid"),
    ]
    placeholders = next(e for e in result.errors if e.code == "locale-placeholders-differ")
    assert placeholders.message == (
        "'Rolled {n}' has placeholders {n} and its translation has {count}"
    )


def test_messages_must_be_a_mapping(make_package: PackageFactory, base: dict[str, Any]) -> None:
    root = make_package(base, files={ZH: "messages: [a, b]\n"})
    assert codes(load_package(root)) == [(ZH, "/messages", "locale-messages-invalid")]


def test_an_event_translation_may_leave_out_topic_and_match_by_position(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    events = base["contributes"]["events"]
    translated = [{"description": f"übersetzt {i}"} for i in range(len(events))]
    put(base, "/contributes/events", events)
    root = make_package(
        base, files={"PLUGIN.de.md": _variant({"contributes": {"events": translated}})}
    )
    result = load_package(root)
    assert result.ok, [str(e) for e in result.errors]
    assert not [w for w in result.warnings if w.code == "locale-entry-unmatched"]


def test_an_event_without_topic_in_a_list_of_another_length_matches_nothing(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    events = base["contributes"]["events"]
    translated = [{"description": "x"} for _ in range(len(events) + 1)]
    root = make_package(
        base, files={"PLUGIN.de.md": _variant({"contributes": {"events": translated}})}
    )
    result = load_package(root)
    assert result.ok
    unmatched = [w for w in result.warnings if w.code == "locale-entry-unmatched"]
    assert [(w.file, w.path) for w in unmatched] == [
        ("PLUGIN.de.md", f"/contributes/events/{i}") for i in range(len(translated))
    ]
    assert "repeat topic to match it" in unmatched[0].message


def _variant(data: dict[str, Any]) -> str:
    import yaml

    return "---\n" + yaml.safe_dump(data, allow_unicode=True) + "---\nAuf Deutsch.\n"


def test_the_older_covel_format_is_named(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    base["type"] = "plugin"
    put(base, "/runtime/agent", {"llm": {"slot": "main"}, "loop": {"completion": {"tool": "done"}}})
    result = load_package(make_package(base))
    [older] = [e for e in result.errors if e.code == "older-format"]
    assert (older.file, older.path) == ("PLUGIN.md", "/type")
    assert "Covel's previous manifest format" in older.message
    for mark in ("top-level type:", "agent.llm", "agent.loop.completion"):
        assert mark in older.message


def test_a_current_manifest_is_not_called_older(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    result = load_package(make_package(base))
    assert result.ok and not [e for e in result.errors if e.code == "older-format"]
