// ctx.random, as Covel's: `int(min, max)` gives an integer in [min, max) — the upper bound is
// excluded, so a d20 is int(1, 21). Draws come from one of three sources:
//
// - COVEL_RANDOM_SEED in the host's environment (Covel's test-server switch): the n-th draw of a
//   (session, plugin, stream) is min + HMAC-SHA256(seed, JSON [plugin, stream, n]) read as a 48-bit
//   big-endian number, mod (max - min). The counter lives in the host process, so a session's
//   stream continues across calls, as Covel's does in its server process.
// - a seed from Python (the hub's per-turn seed, e.g. "<session>:<turn>"): the same formula with a
//   counter per call starting at 0, so a retried turn rolls the same dice.
// - neither: node:crypto randomInt.
//
// The stream is the runtime (or the RPC action / tool) that draws, as in Covel. Not for secrets.
import { createHmac, randomInt } from "node:crypto";

// node:crypto randomInt takes no wider range; Covel's seeded path keeps the same bound.
const MAX_RANGE = 2 ** 48;
// Read once: the switch is set when the host starts, like Covel's server setting.
const ENV_SEED = process.env.COVEL_RANDOM_SEED || undefined;
const sessionDraws = new Map(); // JSON [session, plugin, stream] -> draws so far (COVEL_RANDOM_SEED only)

function checkBounds(min, max) {
  if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || max <= min || max - min > MAX_RANGE) {
    throw new RangeError(`ctx.random.int needs safe integers with min < max: ${min}, ${max}`);
  }
}

function hmacDraw(seed, pluginId, stream, index, min, max) {
  const digest = createHmac("sha256", String(seed)).update(JSON.stringify([pluginId, stream, index])).digest();
  return min + (digest.readUIntBE(0, 6) % (max - min));
}

/** Forget a session's COVEL_RANDOM_SEED counters (a session created again under a used ID). */
export function restartSessionRandom(sessionId) {
  const prefix = `${JSON.stringify([sessionId]).slice(0, -1)},`;
  for (const key of [...sessionDraws.keys()]) if (key.startsWith(prefix)) sessionDraws.delete(key);
}

/**
 * createRandom({seed, sessionId, pluginId, stream}). A plain string is taken as the seed (the
 * older call form). Besides Covel's int the object keeps the hub's earlier helpers, each built
 * on int so they share its draw order: random() in [0,1), float, bool, pick, shuffle, roll.
 */
export function createRandom(options = {}) {
  const scope = typeof options === "string" ? { seed: options } : options ?? {};
  const pluginId = String(scope.pluginId ?? "");
  const stream = String(scope.stream ?? scope.pluginId ?? "");
  const callSeed = scope.seed === undefined || scope.seed === null || scope.seed === "" ? undefined : String(scope.seed);
  let callDraws = 0;

  const int = (min, max) => {
    checkBounds(min, max);
    if (ENV_SEED !== undefined) {
      const key = JSON.stringify([String(scope.sessionId ?? ""), pluginId, stream]);
      const index = sessionDraws.get(key) ?? 0;
      sessionDraws.set(key, index + 1);
      return hmacDraw(ENV_SEED, pluginId, stream, index, min, max);
    }
    if (callSeed !== undefined) return hmacDraw(callSeed, pluginId, stream, callDraws++, min, max);
    return randomInt(min, max);
  };

  const UNIT = 2 ** 32;
  const unit = () => int(0, UNIT) / UNIT;
  const random = () => unit();
  random.int = int;
  random.seed = callSeed ?? null;
  random.float = (min = 0, max = 1) => Number(min) + unit() * (Number(max) - Number(min));
  random.bool = (p = 0.5) => unit() < p;
  random.pick = (items) => (items && items.length ? items[int(0, items.length)] : undefined);
  random.shuffle = (items) => {
    const copy = [...(items ?? [])];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = int(0, i + 1);
      [copy[i], copy[j]] = [copy[j], copy[i]];
    }
    return copy;
  };
  /** `count` dice of `sides` sides: {rolls, total}; each roll is int(1, sides + 1). */
  random.roll = (sides, count = 1) => {
    const rolls = Array.from({ length: count }, () => int(1, Number(sides) + 1));
    return { rolls, total: rolls.reduce((sum, n) => sum + n, 0) };
  };
  return Object.freeze(random);
}
