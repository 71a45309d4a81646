"""What plugin code may import: pure Node built-ins yes, anything that reaches out no; TypeScript
sources as Covel's authors write them; a failed import names the importing file (and line)."""

from __future__ import annotations

import pytest

from pluginhost.errors import PluginLoadError
from pluginhost.services import plugin_load, plugin_tool_call

PROBE = """
import {{ z }} from "zod";
{imports}
export default function register(covel) {{
  covel.registerTool(covel.toolkit.tool({{ name: "probe", description: "p", parameters: z.object({{}}),
    async execute() {{ return {result}; }} }}));
}}
"""

TOOLS = "contributes:\n  tools: [probe]\n"


def probe(make_package, host, callbacks, imports: str, result: str, extra: dict | None = None):
    files = {"server/index.js": PROBE.format(imports=imports, result=result), **(extra or {})}
    manifest = make_package(TOOLS, files)
    return plugin_tool_call(
        manifest=manifest, tool="probe", args={}, callbacks=callbacks, host=host
    )


def test_the_pure_built_ins_are_allowed(make_package, host, callbacks):
    imports = """
        import { createHash, randomUUID } from "node:crypto";
        import { Buffer } from "node:buffer";
        import util from "node:util";
        import { URL } from "node:url";
        import path from "node:path";
        import { EventEmitter } from "events";
        import { StringDecoder } from "node:string_decoder";
        import querystring from "node:querystring";
        import assert from "node:assert/strict";
    """
    result = """{
        sha: createHash("sha256").update("covel").digest("hex").slice(0, 12),
        b64: Buffer.from("hi").toString("base64"),
        fmt: util.format("%s-%d", "a", 1),
        host: new URL("https://example.org/x").host,
        joined: path.posix.join("a", "b"),
        emitter: typeof new EventEmitter().on,
        decoded: new StringDecoder("utf8").write(Buffer.from([0xe2, 0x82, 0xac])),
        qs: querystring.stringify({ a: 1 }),
        asserted: (assert.equal(1, 1), true),
        uuid: randomUUID().length,
    }"""
    content = probe(make_package, host, callbacks, imports, result).content
    assert content == {
        "sha": "5a15fcf0b91d",
        "b64": "aGk=",
        "fmt": "a-1",
        "host": "example.org",
        "joined": "a/b",
        "emitter": "function",
        "decoded": "€",
        "qs": "a=1",
        "asserted": True,
        "uuid": 36,
    }


@pytest.mark.parametrize(
    "specifier",
    [
        "node:fs",
        "fs/promises",
        "node:net",
        "node:http",
        "https",
        "node:dgram",
        "node:tls",
        "node:child_process",
        "node:worker_threads",
        "node:vm",
        "node:inspector",
        "node:module",
        "node:process",
        "node:os",
        "node:cluster",
        "node:v8",
    ],
)
def test_the_built_ins_that_reach_out_are_refused(make_package, host, specifier):
    manifest = make_package(
        TOOLS, {"server/index.js": PROBE.format(imports=f'import "{specifier}";', result="1")}
    )
    with pytest.raises(PluginLoadError) as caught:
        plugin_load(manifest=manifest, host=host)
    assert caught.value.code == "plugin_import_refused"
    assert f'import "{specifier}" from server/index.js is refused' in caught.value.message
    assert "reaches outside the plugin host" in caught.value.message


def test_a_dynamic_import_of_fs_is_refused_too(make_package, host, callbacks):
    result = """await import("node:fs").then(() => "loaded", (e) => e.code)"""
    assert probe(make_package, host, callbacks, "", result).content == "plugin_import_refused"


def test_a_js_specifier_runs_the_typescript_source(make_package, host, callbacks):
    extra = {
        "server/strategy.ts": (
            'import { double } from "./lib/math.mjs";\n'
            "export interface Move { readonly name: string; power: number }\n"
            "export function pick(moves: Move[]): Move { return { ...moves[0]!, power: double(moves[0]!.power) }; }\n"
        ),
        "server/lib/math.mts": "export const double = (n: number): number => n * 2;\n",
    }
    content = probe(
        make_package,
        host,
        callbacks,
        'import { pick } from "./strategy.js";',
        'pick([{ name: "jab", power: 3 }])',
        extra,
    ).content
    assert content == {"name": "jab", "power": 6}


def test_a_missing_module_names_the_importing_file_and_the_specifier(make_package, host):
    manifest = make_package(
        TOOLS,
        {
            "server/index.js": PROBE.format(imports='import { a } from "./lib/a.js";', result="a"),
            "server/lib/a.js": 'export { b as a } from "./nowhere.js";\n',
        },
    )
    with pytest.raises(PluginLoadError) as caught:
        plugin_load(manifest=manifest, host=host)
    assert caught.value.code == "module_not_found"
    assert caught.value.message == (
        'import "./nowhere.js" from server/lib/a.js: no such file in the package'
    )


def test_a_syntax_error_names_the_file_and_line(make_package, host):
    manifest = make_package(
        TOOLS,
        {
            "server/index.js": PROBE.format(imports='import "./broken.js";', result="1"),
            "server/broken.js": "export const ok = 1;\nexport const = 2;\n",
        },
    )
    with pytest.raises(PluginLoadError) as caught:
        plugin_load(manifest=manifest, host=host)
    assert caught.value.code == "module_syntax_error"
    assert "server/broken.js:2" in caught.value.message
    assert caught.value.details == {"file": "server/broken.js", "line": 2}


def test_a_module_that_throws_while_loading_names_the_file_and_line(make_package, host):
    manifest = make_package(
        TOOLS,
        {
            "server/index.js": PROBE.format(imports='import "./init.js";', result="1"),
            "server/init.js": 'const x = 1;\nthrow new Error("no config");\n',
        },
    )
    with pytest.raises(PluginLoadError) as caught:
        plugin_load(manifest=manifest, host=host)
    assert caught.value.code == "module_failed"
    assert "server/init.js:2" in caught.value.message
    assert "no config" in caught.value.message
