"""plugin_extension_call: one extension provider run for real in Node, its input and output
checked by the point's schema (pluginhost/node/extension_points.mjs), time limited, and the
points without a counterpart in the hub refused when the package loads."""

from __future__ import annotations

import pytest

from pluginhost.callbacks import InMemoryCallbacks
from pluginhost.errors import ExtensionFailure, PluginLoadError, PluginTimeout
from pluginhost.services import plugin_extension_call, plugin_load

PROVIDERS = """
entry: ./server/index.js
contributes:
  extensions:
    - point: prompt.segment@1
      id: notes
    - point: prompt.segment@1
      id: wrong
    - point: prompt.segment@1
      id: slow
    - point: ui.slot@1
      id: panel
      slot: session.summary@1
      watch: [notes]
"""

ENTRY = """
    export default function (covel) {
      covel.provideExtension("prompt.segment@1", "notes", {
        async handler(input, ctx) {
          const row = await ctx.pluginData.get("notes", "last");
          const hidden = await ctx.pluginData.list("_hidden.secrets");
          return [{
            id: "notes", content: JSON.stringify({ row, hidden, input, pluginId: ctx.pluginId }),
            position: "system", audience: "all", volatility: "turn",
            providerPluginId: "someone-else",
          }];
        },
      });
      covel.provideExtension("prompt.segment@1", "wrong", {
        handler: () => [{ id: "wrong", content: 3, position: "sideways", audience: "all", volatility: "turn" }],
      });
      covel.provideExtension("prompt.segment@1", "slow", {
        handler: () => new Promise((resolve) => setTimeout(() => resolve([]), 3000)),
      });
      covel.provideExtension("ui.slot@1", "panel", {
        handler: (input) => (input.previous === "markup" ? { entries: [{ id: "x", label: "X", kind: "html", value: "<b>" }] } : { entries: [] }),
      });
    }
"""


@pytest.fixture
def providers(make_package):
    return make_package(PROVIDERS, {"server/index.js": ENTRY}, name="providers")


def call(manifest, host, extension, input, callbacks=None, **kwargs):
    return plugin_extension_call(
        manifest=manifest,
        point=kwargs.pop("point", "prompt.segment@1"),
        id=extension,
        input=input,
        callbacks=callbacks or InMemoryCallbacks(),
        host=host,
        **kwargs,
    )


def test_a_provider_reads_its_own_rows_and_the_host_attributes_its_segments(providers, host):
    import json

    data = {
        ("providers", "notes"): {"last": {"text": "hi"}},
        ("providers", "_hidden.secrets"): {"a": 1},
    }
    [segment] = call(
        providers,
        host,
        "notes",
        {"turnId": "t1", "playerMessage": "go"},
        InMemoryCallbacks(data=data),
    )
    # The host, not the provider, says whose segment it is.
    assert segment["providerPluginId"] == "providers"
    seen = json.loads(segment["content"])
    # An extension reads whole rows (value in .value); hidden namespaces read as empty.
    assert seen["row"] == {
        "pluginId": "providers",
        "namespace": "notes",
        "key": "last",
        "value": {"text": "hi"},
    }
    assert seen["hidden"] == []
    assert seen["input"] == {"turnId": "t1", "playerMessage": "go"}


def test_it_refuses_an_input_or_output_the_point_does_not_allow(providers, host):
    with pytest.raises(ExtensionFailure) as bad_input:
        call(providers, host, "notes", {"turnId": "t1"})
    assert bad_input.value.code == "extension_input_invalid"
    assert "playerMessage" in bad_input.value.message
    with pytest.raises(ExtensionFailure) as bad_output:
        call(providers, host, "wrong", {"turnId": "t1", "playerMessage": ""})
    assert bad_output.value.code == "extension_output_invalid"
    paths = {d["path"] for d in bad_output.value.details}
    assert {"0.content", "0.position"} <= paths


def test_a_slot_value_must_fit_its_slot(providers, host):
    empty = {"slot": "session.summary@1", "previous": None, "events": []}
    answer = call(providers, host, "panel", empty, point="ui.slot@1", slot="session.summary@1")
    assert answer == {"entries": []}
    with pytest.raises(ExtensionFailure) as refused:
        call(
            providers,
            host,
            "panel",
            {**empty, "previous": "markup"},
            point="ui.slot@1",
            slot="session.summary@1",
        )
    assert refused.value.code == "extension_output_invalid"
    assert "session.summary@1" in refused.value.message


def test_a_provider_past_its_limit_times_out_and_an_unknown_one_is_named(providers, host):
    with pytest.raises(PluginTimeout):
        call(providers, host, "slow", {"turnId": "t", "playerMessage": ""}, timeout=0.3)
    with pytest.raises(ExtensionFailure) as missing:
        call(providers, host, "nobody", {"turnId": "t", "playerMessage": ""})
    assert missing.value.code == "extension_not_found"


@pytest.mark.parametrize(
    ("point", "code"),
    [
        ("media.image-flow@1", "extension_point_unsupported"),
        ("session.world-context@1", "extension_point_unsupported"),
        ("prompt.sparkles@1", "extension_point_unknown"),
    ],
)
def test_points_the_hub_does_not_call_are_refused_at_load(make_package, host, point, code):
    manifest = make_package(
        f"entry: ./server/index.js\ncontributes:\n  extensions:\n    - point: {point}\n      id: x\n",
        {
            "server/index.js": f"""
                export default function (covel) {{
                  covel.provideExtension("{point}", "x", {{ handler: () => ({{}}) }});
                }}
            """
        },
    )
    with pytest.raises(PluginLoadError) as refused:
        plugin_load(manifest=manifest, host=host, callbacks=InMemoryCallbacks())
    assert refused.value.code == code
    assert f"{point}/x" in refused.value.message


def test_a_community_provider_runs_in_its_contained_host_only_once_approved(
    tmp_path, settings, db, bob
):
    import json

    from test_containment import approve, index

    from catalogue.manifest.loader import load_package
    from pluginhost.pool import host_for

    settings.COVEL_USER_PLUGINS_DIR = tmp_path / "user"
    folder = tmp_path / "user" / "badge"
    (folder / "server").mkdir(parents=True)
    frontmatter = {
        "id": "badge",
        "version": "1.0.0",
        "description": "A community segment provider.",
        "entry": "./server/index.js",
        "contributes": {"extensions": [{"point": "prompt.segment@1", "id": "badge"}]},
    }
    (folder / "PLUGIN.md").write_text(f"---\n{json.dumps(frontmatter)}\n---\nBadge.\n")
    (folder / "server" / "index.js").write_text(
        'export default function (covel) {\n  covel.provideExtension("prompt.segment@1", "badge", {\n'
        '    handler: () => [{ id: "badge", content: String(typeof process.env.HOME), '
        'position: "system", audience: "all", volatility: "stable" }],\n  });\n}\n'
    )
    package = index(folder, "user")
    manifest = load_package(folder, host_version="0.1.0").manifest
    with pytest.raises(PluginLoadError) as refused:
        call(manifest, None, "badge", {"turnId": "t", "playerMessage": ""})
    assert refused.value.code == "plugin_not_approved"
    assert not host_for(manifest).running  # nothing of it was imported
    approve(package, bob)
    [segment] = call(manifest, None, "badge", {"turnId": "t", "playerMessage": ""})
    assert host_for(manifest).trust == "community"
    assert segment["providerPluginId"] == "badge"
    assert segment["content"] == "undefined"  # plugin code sees no environment


def test_the_bundled_scene_brief_is_a_valid_segment(host):
    from pathlib import Path

    from catalogue.manifest.loader import load_package

    folder = Path(__file__).resolve().parents[2] / "plugins" / "scene-setter"
    manifest = load_package(folder).manifest
    scene = {"place": "the harbour", "time": "dusk"}
    data = {("scene-setter", "scene"): {"current": scene}}
    [segment] = call(
        manifest,
        host,
        "scene-brief",
        {"turnId": "t", "playerMessage": ""},
        InMemoryCallbacks(data=data),
    )
    assert segment["content"] == "Current scene: the harbour at dusk."
    assert (segment["audience"], segment["volatility"]) == ("all", "turn")
