"""ctx.random behaves as Covel's: int(min, max) excludes max; seeded draws follow Covel's formula.

Covel (packages/runtime, plugin-random): the n-th draw of a stream is
min + HMAC-SHA256(seed, JSON [plugin, stream, n]) read as 48 bits big-endian, mod (max - min).
The hub seeds per call from Python's seed; COVEL_RANDOM_SEED seeds per session as Covel's does.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
from pathlib import Path

import pytest

from pluginhost.host import node_binary
from pluginhost.services import plugin_function_call

RANDOM = Path(__file__).resolve().parents[2] / "pluginhost" / "node" / "random.mjs"

HANDLER = """
export default async function handler(ctx) {
  const n = ctx.manualPayload?.n ?? 0;
  const d20 = Array.from({ length: n }, () => ctx.random.int(1, 21));
  let refused = null;
  try {
    ctx.random.int(5, 5);
  } catch (error) {
    refused = `${error.name}: ${error.message}`;
  }
  return { outcome: "success", value: { d20, refused, roll: ctx.random.roll(6, 2) } };
}
"""


def covel_draw(seed: str, plugin: str, stream: str, index: int, low: int, high: int) -> int:
    message = json.dumps([plugin, stream, index], separators=(",", ":"), ensure_ascii=False)
    digest = hmac.new(seed.encode(), message.encode(), hashlib.sha256).digest()
    return low + int.from_bytes(digest[:6], "big") % (high - low)


@pytest.fixture
def dice(make_package):
    return make_package(
        "runtime:\n  schedule: { stage: post-turn }\n  function: {}\n",
        {"handler.js": HANDLER},
        name="dicecase",
    )


def draws(dice, host, callbacks, *, seed, n):
    return plugin_function_call(
        manifest=dice,
        runtime="dicecase",
        callbacks=callbacks,
        host=host,
        context={"manualPayload": {"n": n}, "seed": seed, "sessionId": "s1"},
    ).result["value"]


def test_int_excludes_its_upper_bound(dice, host, callbacks):
    rolls = draws(dice, host, callbacks, seed="s1:t1", n=900)["d20"]
    assert set(rolls) == set(range(1, 21))  # every face, and never 21
    fresh = draws(dice, host, callbacks, seed=None, n=300)["d20"]
    assert min(fresh) >= 1 and max(fresh) <= 20


def test_a_seeded_call_draws_covels_sequence(dice, host, callbacks):
    value = draws(dice, host, callbacks, seed="s1:t7", n=5)
    expected = [covel_draw("s1:t7", "dicecase", "dicecase", i, 1, 21) for i in range(5)]
    assert value["d20"] == expected
    # roll(6, 2) continues the same stream: each die is int(1, 7).
    rolls = [covel_draw("s1:t7", "dicecase", "dicecase", i, 1, 7) for i in (5, 6)]
    assert value["roll"] == {"rolls": rolls, "total": sum(rolls)}
    assert draws(dice, host, callbacks, seed="s1:t7", n=5)["d20"] == expected  # a retry repeats


def test_an_empty_range_is_refused_as_covel(dice, host, callbacks):
    refused = draws(dice, host, callbacks, seed="s", n=0)["refused"]
    assert refused == "RangeError: ctx.random.int needs safe integers with min < max: 5, 5"


def test_covel_random_seed_numbers_a_sessions_stream_across_calls():
    script = f"""
        import {{ createRandom }} from {json.dumps(RANDOM.as_uri())};
        const scope = {{ sessionId: "s9", pluginId: "dice", stream: "roller" }};
        const first = createRandom(scope);
        const second = createRandom({{ ...scope, seed: "ignored-when-the-env-seed-is-set" }});
        const other = createRandom({{ ...scope, stream: "other" }});
        console.log(JSON.stringify([first.int(1, 21), first.int(1, 21), second.int(1, 21), other.int(0, 100)]));
    """
    env = {**os.environ, "COVEL_RANDOM_SEED": "fixed"}
    out = subprocess.run(
        [node_binary(), "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        check=True,
    ).stdout
    assert json.loads(out) == [
        covel_draw("fixed", "dice", "roller", 0, 1, 21),
        covel_draw("fixed", "dice", "roller", 1, 1, 21),
        covel_draw("fixed", "dice", "roller", 2, 1, 21),  # the session's stream went on
        covel_draw("fixed", "dice", "other", 0, 0, 100),
    ]
