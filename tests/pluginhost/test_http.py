"""covel.http is proxied to Python: the approved-only client decides, the plugin sees its verdict."""

from __future__ import annotations

import pytest

from pluginhost.callbacks import InMemoryCallbacks
from pluginhost.errors import CallbackRefused
from pluginhost.services import plugin_tool_call

ENTRY = """
export default function register(covel) {
  const { tool, z } = covel.toolkit;
  covel.registerTool(tool({ name: "fetch", description: "fetch", parameters: z.object({ url: z.string() }),
    async execute({ url }) {
      try {
        const response = await covel.http.fetch(url, { method: "POST", headers: { "x-a": "1" }, body: { q: "rain" } });
        return { status: response.status, ok: response.ok, data: await response.json() };
      } catch (error) {
        return { refused: error.code, message: error.message };
      }
    } }));
}
"""


@pytest.fixture
def fetcher(make_package):
    return make_package(
        "contributes:\n  tools: [fetch]\n", {"server/index.js": ENTRY}, name="fetcher"
    )


def test_covel_http_goes_through_the_callback(fetcher, host):
    seen = {}

    def fake(**request):
        seen.update(request)
        return {
            "status": 200,
            "headers": {"content-type": "application/json"},
            "body": b'{"sky": "fog"}',
        }

    callbacks = InMemoryCallbacks(http=fake)
    envelope = plugin_tool_call(
        manifest=fetcher,
        tool="fetch",
        args={"url": "https://api.example.org/w"},
        callbacks=callbacks,
        host=host,
    )
    assert envelope.content == {"status": 200, "ok": True, "data": {"sky": "fog"}}
    assert seen["package"] == "fetcher"
    assert (seen["method"], seen["url"], seen["body"]) == (
        "POST",
        "https://api.example.org/w",
        b'{"q":"rain"}',
    )
    assert seen["headers"] == {"x-a": "1"}


def test_a_refusal_of_the_approvals_client_reaches_the_plugin_as_a_code(fetcher, host, monkeypatch):
    import approvals.http

    def refuse(**request):
        raise approvals.http.HttpRefused(
            f"covel.http refused POST {request['url']}: origin not approved"
        )

    monkeypatch.setattr(approvals.http, "plugin_http_request", refuse)
    envelope = plugin_tool_call(
        manifest=fetcher,
        tool="fetch",
        args={"url": "https://evil.example/"},
        callbacks=InMemoryCallbacks(),
        host=host,
    )
    assert envelope.content["refused"] == "http_refused"
    assert "origin not approved" in envelope.content["message"]


def test_refusing_callbacks_refuse_everything():
    from pluginhost.callbacks import RefusingCallbacks

    with pytest.raises(CallbackRefused):
        RefusingCallbacks().plugin_data_get(package="p", runtime=None, namespace="n", key="k")
