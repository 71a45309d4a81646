"""Loading an entry module: registrations checked both ways, imports confined to the package."""

from __future__ import annotations

import pytest

from pluginhost.errors import PluginLoadError
from pluginhost.services import plugin_load, plugin_tool_call

TOOL = """
export default function register(covel) {
  const { tool, z } = covel.toolkit;
  covel.registerTool(tool({ name: "alpha", description: "a", parameters: z.object({}), async execute() { return 1; } }));
  %s
}
"""


def test_a_matching_package_loads_and_reports_its_tools(make_package, host):
    manifest = make_package(
        """
        contributes:
          tools: [alpha]
          services:
            - contract: demo-svc@1
              access: write
          hooks: [TurnStart, { event: PreRuntime, enforce: pre }]
          wires: [img-wire]
          extensions: [prompt.segment@1/facts]
        """,
        {
            "server/index.js": TOOL
            % """
            covel.registerService({ name: "svc", contract: "demo-svc@1", access: "write", handler: async () => 1 });
            covel.on("TurnStart", async () => ({ action: "continue" }));
            covel.registerHook("PreRuntime", async () => ({ action: "continue" }), { enforce: "pre" });
            covel.registerWires({ image: [{ id: "img-wire", generate: async () => ({}) }] });
            covel.provideExtension("prompt.segment@1", "facts", { handler: () => [] });
        """
        },
    )
    loaded = plugin_load(manifest=manifest, host=host)
    assert [tool["name"] for tool in loaded.tools] == ["alpha"]
    assert loaded.tools[0]["jsonSchema"]["type"] == "object"
    assert loaded.extracted["hooks"] == ["TurnStart", {"event": "PreRuntime", "enforce": "pre"}]
    assert loaded.extracted["services"] == [{"contract": "demo-svc@1", "access": "write"}]
    # A second load of the same, unchanged package is a no-op.
    assert plugin_load(manifest=manifest, host=host) is None


def test_it_refuses_an_undeclared_and_a_missing_registration_naming_each(make_package, host):
    manifest = make_package(
        "contributes:\n  tools: [alpha]\n  actions: [declared-only]\n",
        {
            "server/index.js": TOOL
            % 'covel.registerRpc("sneaky", async () => 1); covel.registerFormValidator("f", () => undefined);'
        },
    )
    with pytest.raises(PluginLoadError) as caught:
        plugin_load(manifest=manifest, host=host)
    error = caught.value
    assert error.code == "plugin_registration_invalid"
    problems = {(d["kind"], d["name"], d["problem"]) for d in error.details}
    assert problems == {
        ("actions", "sneaky", "undeclared"),
        ("actions", "declared-only", "missing"),
        ("forms", "f", "undeclared"),
    }
    assert '"sneaky"' in error.message and '"declared-only"' in error.message


def test_it_refuses_a_service_whose_access_or_model_facing_differs(make_package, host):
    manifest = make_package(
        "contributes:\n  tools: [alpha]\n  services: [demo-svc@1]\n",
        {
            "server/index.js": TOOL
            % """
            covel.registerService({ name: "svc", contract: "demo-svc@1", access: "write", modelFacing: true,
              description: "d", input: covel.toolkit.z.object({}), handler: async () => 1 });
        """
        },
    )
    with pytest.raises(PluginLoadError) as caught:
        plugin_load(manifest=manifest, host=host)
    assert caught.value.code == "plugin_registration_invalid"
    assert "access write but declared with access read" in caught.value.message
    assert "modelFacing true but declared with modelFacing false" in caught.value.message


def test_it_refuses_a_hook_registered_in_another_phase(make_package, host):
    manifest = make_package(
        "contributes:\n  tools: [alpha]\n  hooks: [TurnStart]\n",
        {
            "server/index.js": TOOL
            % 'covel.on("TurnStart", async () => ({ action: "continue" }), { enforce: "post" });'
        },
    )
    with pytest.raises(PluginLoadError) as caught:
        plugin_load(manifest=manifest, host=host)
    assert {(d["name"], d["problem"]) for d in caught.value.details} == {
        ("TurnStart:post", "undeclared"),
        ("TurnStart:normal", "missing"),
    }


@pytest.mark.parametrize(
    ("statement", "specifier"),
    [
        ('import fs from "node:fs";', "node:fs"),
        ('import cp from "node:child_process";', "node:child_process"),
        ('import fs from "fs";', "fs"),
        ('import _ from "lodash";', "lodash"),
        ('import x from "../../outside.js";', "../../outside.js"),
        ('import x from "/etc/passwd";', "/etc/passwd"),
    ],
)
def test_it_refuses_imports_from_outside_the_package(
    make_package, host, statement, specifier, tmp_path
):
    (tmp_path / "outside.js").write_text("export default 1;\n")
    manifest = make_package(
        "contributes:\n  tools: [alpha]\n",
        {"server/index.js": statement + "\n" + TOOL % ""},
    )
    with pytest.raises(PluginLoadError) as caught:
        plugin_load(manifest=manifest, host=host)
    assert caught.value.code == "plugin_import_refused"
    assert f'import "{specifier}"' in caught.value.message
    assert "server/index.js" in caught.value.message


def test_a_dynamic_import_of_a_builtin_is_refused_at_call_time(make_package, host, callbacks):
    manifest = make_package(
        "contributes:\n  tools: [alpha]\n",
        {
            "server/index.js": """
            export default function register(covel) {
              const { tool, z } = covel.toolkit;
              covel.registerTool(tool({ name: "alpha", description: "a", parameters: z.object({}),
                async execute() {
                  const results = [];
                  try { await import("node:fs"); results.push("fs loaded"); } catch (e) { results.push(e.code); }
                  try { process.getBuiltinModule("fs"); results.push("builtin loaded"); } catch (e) { results.push(e.code); }
                  return results;
                } }));
            }
        """
        },
    )
    envelope = plugin_tool_call(
        manifest=manifest, tool="alpha", args={}, callbacks=callbacks, host=host
    )
    assert envelope.content == ["plugin_import_refused", "plugin_import_refused"]


def test_imports_inside_the_package_and_the_provided_modules_resolve(make_package, host, callbacks):
    manifest = make_package(
        "contributes:\n  tools: [alpha]\n",
        {
            "lib/util.js": "export const double = (n) => n * 2;\n",
            "server/index.js": """
                import { z } from "zod";
                import { makeProposal, translate, seatCharacterIds } from "@covel/plugin-handlers-utils";
                import { double } from "../lib/util.js";
                export default function register(covel) {
                  covel.registerTool(covel.toolkit.tool({ name: "alpha", description: "a",
                    parameters: z.object({ n: z.number() }),
                    async execute({ n }) {
                      return { n: double(n), t: translate({ messages: { translations: { "Hi {name}": "Salut {name}" } } }, "Hi {name}", { name: "Ana" }),
                               seats: seatCharacterIds("s1", [{ id: "c9", seatId: "s1" }], [{ id: "s1", currentCharacterId: "c1" }]),
                               kind: typeof makeProposal };
                    } }));
                }
            """,
        },
    )
    envelope = plugin_tool_call(
        manifest=manifest, tool="alpha", args={"n": 21}, callbacks=callbacks, host=host
    )
    assert envelope.content == {
        "n": 42,
        "t": "Salut Ana",
        "seats": ["c1", "c9"],
        "kind": "function",
    }


def test_a_throwing_entry_factory_fails_the_load(make_package, host):
    manifest = make_package(
        "contributes:\n  tools: [alpha]\n",
        {
            "server/index.js": 'export default function register() { throw new Error("boom in factory"); }\n'
        },
    )
    with pytest.raises(PluginLoadError) as caught:
        plugin_load(manifest=manifest, host=host)
    assert caught.value.code == "entry_failed"
    assert "boom in factory" in caught.value.message


def test_registering_after_the_factory_returned_is_refused(make_package, host, callbacks, caplog):
    manifest = make_package(
        "contributes:\n  tools: [alpha]\n",
        {
            "server/index.js": """
            let late;
            export default function register(covel) {
              late = covel;
              const { tool, z } = covel.toolkit;
              covel.registerTool(tool({ name: "alpha", description: "a", parameters: z.object({}), async execute() {
                try { late.registerRpc("late", async () => 1); return "registered"; } catch (e) { return e.code; }
              } }));
            }
        """
        },
    )
    envelope = plugin_tool_call(
        manifest=manifest, tool="alpha", args={}, callbacks=callbacks, host=host
    )
    assert envelope.content == "registration_closed"


def test_a_host_starts_afresh_after_many_loads(make_package, fresh_host, monkeypatch):
    import pluginhost.services as services

    monkeypatch.setattr(services, "MAX_LOADS_PER_HOST", 2)
    manifests = [
        make_package("contributes:\n  tools: [alpha]\n", {"server/index.js": TOOL % ""})
        for _ in range(3)
    ]
    pid = fresh_host.pid
    plugin_load(manifest=manifests[0], host=fresh_host)
    plugin_load(manifest=manifests[1], host=fresh_host)
    assert fresh_host.pid == pid
    plugin_load(manifest=manifests[2], host=fresh_host)
    assert fresh_host.pid != pid and fresh_host.loads == 1
