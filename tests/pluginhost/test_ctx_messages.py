"""ctx.messages as the host builds it (pluginhost/node/messages.mjs), in real Node, against the
behaviour of Covel's pluginMessagesFor (@covel/shared plugin-messages): labels carry every
catalogue, translations only a catalogue of the session's language and script."""

from __future__ import annotations

import builtins
import io
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from catalogue.manifest import load_package
from catalogue.manifest.types import thaw
from pluginhost.host import node_binary
from pluginhost.services import message_catalogs, plugin_tool_call

MESSAGES = Path(__file__).resolve().parents[2] / "pluginhost" / "node" / "messages.mjs"


def messages_for(raw: list[dict[str, Any]], *locales: str | None) -> list[Any]:
    script = f"""
      import {{ messageCatalogs, pluginMessagesFor }} from {json.dumps(MESSAGES.as_uri())};
      // Parsed as the host parses Python's frames: "__proto__" stays an own key.
      const catalogs = messageCatalogs(JSON.parse({json.dumps(json.dumps(raw))}));
      const cache = new Map();
      const out = {json.dumps(list(locales))}.map((locale) => {{
        const m = pluginMessagesFor(catalogs, locale ?? undefined, cache);
        return m === undefined ? null : {{ translations: {{ ...m.translations }},
          labels: Object.fromEntries(Object.entries(m.labels).map(([k, v]) => [k, {{ ...v }}])),
          frozen: Object.isFrozen(m), same: pluginMessagesFor(catalogs, locale ?? undefined, cache) === m }};
      }});
      console.log(JSON.stringify({{ locales: catalogs.map((c) => c.locale), out }}));
    """
    run = subprocess.run(
        [node_binary(), "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return json.loads(run.stdout)


RAW = [
    {"file": "zh.yaml", "messages": {"Hints": "提示", "Gold": "金币", "__proto__": "原型"}},
    {"file": "zh-CN.yml", "messages": {"Gold": "金子"}},
    {"file": "ru.yaml", "messages": {"Hints": "Подсказки"}},
    {"file": "notes.yaml", "messages": {"Hints": "not a language"}},
    {"file": "zh-TW.yaml", "messages": "not a mapping"},
]


def test_catalogues_are_the_known_languages_only_sorted_by_locale():
    result = messages_for(RAW, "en")
    assert result["locales"] == ["ru", "zh", "zh-CN"]


def test_labels_hold_every_language_and_translations_the_sessions_only():
    result = messages_for(RAW, "zh-CN", "en", "zh-TW", "ru-RU", None)
    zh_cn, en, zh_tw, ru, none = result["out"]
    assert zh_cn["labels"] == {
        "Hints": {"zh": "提示", "ru": "Подсказки"},
        "Gold": {"zh": "金币", "zh-CN": "金子"},
        "__proto__": {"zh": "原型"},  # a text like any other, not the prototype
    }
    # The exact tag wins over the bare language of the same script.
    assert zh_cn["translations"] == {"Hints": "提示", "Gold": "金子", "__proto__": "原型"}
    assert en["translations"] == {} and en["labels"] == zh_cn["labels"]
    assert zh_tw["translations"] == {}  # Hant does not take a Hans catalogue
    assert ru["translations"] == {"Hints": "Подсказки"}
    assert none["translations"] == {}
    assert all(m["frozen"] and m["same"] for m in result["out"])


def test_a_package_without_catalogues_gets_no_messages():
    assert messages_for([], "zh-CN")["out"] == [None]
    assert messages_for([{"file": "notes.yaml", "messages": {"a": "b"}}], "zh")["out"] == [None]


def test_the_loader_carries_the_messages_sections_of_the_locale_files(tmp_path):
    root = tmp_path / "pkg"
    (root / "locales").mkdir(parents=True)
    (root / "PLUGIN.md").write_text(
        "---\nid: pkg\nversion: 0.1.0\ndescription: A test package.\n---\nPrompt.\n", "utf-8"
    )
    (root / "locales" / "zh.yaml").write_text(
        "PLUGIN.md:\n  description: 说明\nmessages:\n  Hints: 提示\n", encoding="utf-8"
    )
    (root / "locales" / "fr.yaml").write_text("PLUGIN.md:\n  description: x\n", "utf-8")
    # Not a name the loader takes for a locale, but the host always read it (messages.mjs
    # decides whether it is a language): carried too.
    (root / "locales" / "zh_TW.yml").write_text("messages:\n  Hints: 提示。\n  n: 3\n", "utf-8")
    (root / "locales" / "broken.yaml").write_text("messages: [broken\n", encoding="utf-8")
    (root / "locales" / "large_notes.yaml").write_text(
        "messages:\n  Hints: " + "x" * (1024 * 1024) + "\n", encoding="utf-8"
    )
    (root / "locales" / "fr.messages.json").write_text('{"Level": "Niveau"}', encoding="utf-8")

    result = load_package(root)

    assert result.ok, [str(issue) for issue in result.errors]
    # Non-string entries are left out; a file without a section, unparsable or over the
    # host's 1 MiB gives nothing; messages.json stays apart (the play page's UI texts).
    assert message_catalogs(result.manifest) == [
        {"file": "zh.yaml", "messages": {"Hints": "提示"}},
        {"file": "zh_TW.yml", "messages": {"Hints": "提示。"}},
    ]
    assert thaw(result.manifest.messages) == {"fr": {"Level": "Niveau"}}


TRANSLATING_TOOL = """
export default function register(covel) {
  covel.registerTool(covel.toolkit.tool({ name: "hints", description: "h",
    parameters: covel.toolkit.z.object({}),
    async execute(_args, ctx) { return ctx.messages?.translations?.Hints ?? "none"; } }));
}
"""


def test_the_host_takes_the_messages_from_the_manifest_and_reads_no_locale_file(
    make_package, host, callbacks, monkeypatch
):
    manifest = make_package(
        "contributes:\n  tools: [hints]\n",
        {
            "server/index.js": TRANSLATING_TOOL,
            "locales/zh.yaml": "messages:\n  Hints: 提示\n",
        },
    )
    locale_file = (Path(manifest.path) / "locales" / "zh.yaml").resolve()
    reads: list[str] = []

    def watching(opener):
        def open_(file, *args, **kwargs):
            if isinstance(file, str | bytes | os.PathLike):
                if Path(os.fsdecode(file)).resolve() == locale_file:
                    reads.append(os.fsdecode(file))
            return opener(file, *args, **kwargs)

        return open_

    # Path.read_text/read_bytes open through io.open, package_files through os.open.
    for module in (builtins, io, os):
        monkeypatch.setattr(module, "open", watching(module.open))

    envelope = plugin_tool_call(
        manifest=manifest,
        tool="hints",
        args={},
        callbacks=callbacks,
        context={"locale": "zh-CN"},
        host=host,
    )

    assert envelope.content == "提示"
    assert reads == []
