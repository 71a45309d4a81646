"""@covel/plugin-handlers-utils: every export gives what Covel's own tests expect for the same input.

The inputs are in sdk_cases.mjs and run once in real Node; each test here holds the results
Covel's tests (packages/plugin-handlers-utils/tests/*.test.ts) expect. A package importing every
export by name through the host's resolver is checked at the end.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pluginhost.host import node_binary
from pluginhost.services import plugin_tool_call

CASES = Path(__file__).with_name("sdk_cases.mjs")
SDK = Path(__file__).resolve().parents[2] / "pluginhost" / "node" / "sdk.mjs"


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    run = subprocess.run(
        [node_binary(), str(CASES), "run"], capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(run.stdout)


def value(results: dict[str, Any], name: str) -> Any:
    outcome = results[name]
    assert outcome["ok"], outcome.get("error")
    return outcome["value"]


def test_translate_takes_the_context_first_as_covel(results):
    assert value(results, "translate") == [
        "世界时间：09:00",
        "成功",
        "Failure",
        "Rolled 3",
        "Rolled 3",
        "1 and {b}",
        "constructor",
        "{constructor}",
    ]


def test_label_text_gives_every_shipped_language(results):
    assert value(results, "labelText") == [
        {"en": "Success", "zh": "成功", "ja": "成功だ"},
        "Failure",
        "Success",
        "toString",
    ]


def test_pick_locale_text_uses_chinese_only_for_the_default_locale_and_aliases(results):
    assert value(results, "pickLocaleText") == [
        "中文",
        "中文",
        "English",
        "English",
        "English",
        "English",
    ]


def test_split_list(results):
    assert value(results, "splitList") == [["a", "b", "c", "d"], ["x", "y"], [], [], 32]


def test_read_manual_entity(results):
    assert value(results, "readManualEntity") == [
        {"id": "a"},
        "manualPayload.ruleJson must be valid JSON",
        {"built": True},
        [{"title": "t"}],
        {"id": "r"},
        True,
    ]


def test_assert_entity_envelope(results):
    assert value(results, "assertEntityEnvelope") == [
        {"id": "r1", "extra": 1, "schemaVersion": 1},
        {"id": "r1", "schemaVersion": 1, "kind": "constant"},
        {"characterId": "c1", "schemaVersion": 1},
        "manualPayload.rule must be an object",
        "rule.id must be a non-empty string",
        "rule.id must be 1-128 characters",
        "rule.schemaVersion must be 1",
        "rule is too large; max serialized size is 64KB",
    ]


def test_abort_signal_with_timeout(results):
    assert value(results, "abortSignalWithTimeout") == [False, True, "turn stopped", True, False]


def test_string_and_number_helpers(results):
    assert value(results, "normalizeRequiredString") == [
        "a",
        "name must be a non-empty string",
        "n must be a non-empty string",
    ]
    assert value(results, "optionalString") == ["a", None, None]
    assert value(results, "optionalNumber") == [1.5, 2.5, None, None, None]
    assert value(results, "optionalInteger") == [3, 4, None, None]
    assert value(results, "compactRecord") == [{"a": 1, "c": []}, {"a": 1, "d": [0]}]


def test_mentioned_character_ids(results):
    assert value(results, "mentionedCharacterIds") == [
        [],
        ["al", "li"],
        ["al"],
        ["lian"],
        ["lian"],
        ["town"],
        ["lian", "town"],
        [],
        [],
        [],
        [],
        ["vice"],
        ["pres", "vice"],
        ["vice"],
        ["chair", "vice"],
        ["fuku"],
        ["kaicho", "rin"],
        True,  # a Set, as Covel's
    ]


def test_resolve_i18n_text_follows_the_locale_registry(results):
    assert value(results, "resolveI18nText") == [
        None,
        "plain",
        "你好",
        "你好",  # zh: its canonical alias zh-CN
        "Привет",  # ru-RU: the bare language
        "Hello",  # fr: the registry's English fallback
        "你好",  # no locale: the first string
        "Hi",  # zh-TW is Hant: never the Hans zh
        "Salut",  # nothing fits: the first string
        "Colour",  # en-US: another English of the same script
    ]


def test_resolve_i18n_deep_and_locale_maps(results):
    assert value(results, "resolveI18nDeep") == [
        {"name": "Sword", "id": "torn-letter", "tags": ["sharp"], "meta": {"id": "x"}},
        {"id": "torn-letter"},
    ]
    assert value(results, "isLocaleMap") == [True, False, False, False, False, False]
    assert value(results, "isKnownLocale") == [True, True, False, False]


def test_localized_world_text(results):
    assert value(results, "localizedWorldText") == [
        {"name": "Fog Harbor", "description": "港口"},
        {"name": "雾港", "description": "港口"},
        {},
        "localizedText",
    ]


def test_locale_registry_exports(results):
    assert value(results, "canonicalizeLocale") == ["ru-RU", "zh-Hans-CN", None, None, None]
    assert value(results, "localeLookupCandidates") == [
        ["en-GB", "en"],
        ["zh-TW"],
        ["zh-CN", "zh"],
        ["en"],
        [],
    ]
    assert value(results, "localesShareLanguageAndScript") == [False, True, True, False]
    assert value(results, "localeRegistry") == [
        ["zh-CN", "en-US", "ru-RU"],
        "zh-CN",
        "en-US",
        "zh-CN",
        "en-US",
        None,
        ["en-US"],
        [],
        True,
        False,
        "en",
        True,
        "zh-cn",
        "Locale code must be canonical: en-us -> en-US",
    ]


def test_ids(results):
    assert value(results, "shortId") == [True, True, 2, 2]
    assert value(results, "wordId") == ["npc-lin-yao", "npc-lin-yao-3", True]
    assert value(results, "wordSlug") == ["hello-world-42", "", "a" * 31]


def test_make_proposal_gives_a_uuid_and_the_given_timestamp(results):
    is_uuid, proposal, source = value(results, "makeProposal")
    assert is_uuid
    assert proposal == {
        "id": "",
        "type": "plugin.data",
        "source": {"pluginId": "dice", "runtimeId": "roller"},
        "turnId": "t1",
        "sessionId": "s1",
        "payload": {"namespace": "n", "key": "k", "value": 1},
        "timestamp": "2026-01-01T00:00:00.000Z",
    }
    assert source == {"pluginId": "p", "runtimeId": "p"}


def test_tool_result_helpers_replace_their_own_channel_and_keep_the_other(results):
    assert value(results, "toolResults") == [
        ["b"],  # a second withPendingProposals replaces, as Covel's
        [{"topic": "t", "data": {}}],
        None,
        [{"topic": "t", "data": {}}],
        {"x": 1},
        "plain",
        [],
        1,
        {"summary": "s"},
    ]


def test_overlay_plugin_data(results):
    assert value(results, "overlayPluginData") == [
        {"hit": True, "value": 2},
        {"hit": True, "value": None, "deleted": True},
        {"hit": False},
        [
            ['["n","a"]', {"namespace": "n", "key": "a", "value": 2}],
            ['["m","b"]', {"namespace": "m", "key": "b", "value": None, "deleted": True}],
        ],
        ['["n","a"]'],
    ]


def test_narrative_review(results):
    assert value(results, "narrativeReview") == [
        False,
        2,
        True,
        {"action": "continue"},
        "string",
        {"action": "continue"},
        None,
        False,
    ]
    assert value(results, "outsideDialogue") == [
        "She said   and left.",
        "Al's boat;  她说",
        'He said "unclosed I',
    ]
    assert value(results, "perspectiveError") == [None, True, None, None, "string"]


def test_tool_parameters_become_json_schema_with_zod_4(results):
    seats, tool_kind, error_kind, schema = value(results, "existingHelpers")
    assert seats == ["c1", "c9"]
    assert (tool_kind, error_kind) == ("function", "function")
    assert schema["type"] == "object"
    assert schema["required"] == ["n"]
    assert schema["properties"]["n"]["type"] == "integer"
    assert schema["properties"]["n"]["minimum"] == 1


# Covel's SDK index exports these values (types aside); a real package imports them by name. The
# list is checked in beside this test, copied from Covel's src/index.ts (its header says which copy).
EXPORTS_FILE = Path(__file__).with_name("covel_sdk_exports.txt")
COVEL_EXPORTS = [
    line.strip()
    for line in EXPORTS_FILE.read_text().splitlines()
    if line.strip() and not line.startswith("#")
]


def test_the_sdk_exports_every_name_of_covels_index():
    """The next export Covel adds fails here until the host's SDK has it too."""
    script = f"const m = await import({json.dumps(SDK.as_uri())}); console.log(JSON.stringify(Object.keys(m)));"
    run = subprocess.run(
        [node_binary(), "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    ours = set(json.loads(run.stdout))
    missing = [name for name in COVEL_EXPORTS if name not in ours]
    assert missing == [], f"pluginhost/node/sdk.mjs lacks Covel exports {missing}"
    assert len(COVEL_EXPORTS) == len(set(COVEL_EXPORTS)) >= 30


def test_compare_text_orders_by_code_point_after_nfc(results):
    # é precomposed equals e + combining acute; U+FFFF sorts before an astral character.
    assert value(results, "compareText") == [-1, 1, 0, -1, 0, -1, -1]
    assert value(results, "sortedByCompareText") == ["Zed", "apple", "b", "\uffff", "\U0001f600"]


def test_append_summary_entries_keeps_earlier_providers_and_caps_at_16(results):
    first, second, capped, other = value(results, "appendSummaryEntries")
    assert [e["id"] for e in first["entries"]] == ["a"]
    assert [e["id"] for e in second["entries"]] == ["a", "b"]
    assert capped == ["p14", "x"]  # 15 earlier + 2 new, cut at 16: y is dropped
    assert other == {"entries": []}


def test_a_package_imports_every_export_by_name(make_package, host, callbacks):
    names = ", ".join(COVEL_EXPORTS)
    manifest = make_package(
        "contributes:\n  tools: [probe]\n",
        {
            "server/index.js": f"""
                import {{ {names} }} from "@covel/plugin-handlers-utils";
                import {{ z }} from "zod";
                const all = {{ {names} }};
                export default function register(covel) {{
                  covel.registerTool(covel.toolkit.tool({{ name: "probe", description: "p",
                    parameters: z.object({{}}),
                    async execute() {{
                      return {{ kinds: Object.fromEntries(Object.entries(all).map(([k, v]) => [k, typeof v])),
                               hasToJSONSchema: typeof z.toJSONSchema }};
                    }} }}));
                }}
            """
        },
    )
    envelope = plugin_tool_call(
        manifest=manifest, tool="probe", args={}, callbacks=callbacks, host=host
    )
    assert envelope.content["kinds"] == {name: "function" for name in COVEL_EXPORTS}
    assert envelope.content["hasToJSONSchema"] == "function"
