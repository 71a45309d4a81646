"""ctx.messages as the host builds it (pluginhost/node/messages.mjs), in real Node, against the
behaviour of Covel's pluginMessagesFor (@covel/shared plugin-messages): labels carry every
catalogue, translations only a catalogue of the session's language and script."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from pluginhost.host import node_binary
from pluginhost.services import message_catalogs

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


def test_python_reads_the_messages_sections_of_the_locale_files(tmp_path):
    (tmp_path / "locales").mkdir()
    (tmp_path / "locales" / "zh.yaml").write_text(
        'PLUGIN.md:\n  description: 说明\nmessages:\n  Hints: 提示\n  "Count {n}": 3\n',
        encoding="utf-8",
    )
    (tmp_path / "locales" / "fr.yaml").write_text("PLUGIN.md:\n  description: x\n", "utf-8")
    (tmp_path / "locales" / "de.yaml").write_text("messages: [broken\n", encoding="utf-8")
    (tmp_path / "locales" / "lock.json").write_text("{}", encoding="utf-8")

    class Package:
        path = str(tmp_path)

    # Non-string entries are left out; a file without a section or unreadable gives nothing.
    assert message_catalogs(Package()) == [{"file": "zh.yaml", "messages": {"Hints": "提示"}}]
