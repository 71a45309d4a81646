// A seeded random source for ctx.random: the same seed gives the same draws, so a retried turn
// (keyed by its sourceTurnId) rolls the same dice. Not for secrets.

function hashSeed(text) {
  // FNV-1a over the seed text, spread into four 32-bit words for sfc32.
  const words = [];
  let h = 0x811c9dc5;
  for (let round = 0; round < 4; round++) {
    for (let i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    h ^= round + 0x9e3779b9;
    h = Math.imul(h, 0x01000193) >>> 0;
    words.push(h);
  }
  return words;
}

export function createRandom(seed) {
  const seedText = String(seed ?? "");
  let [a, b, c, d] = hashSeed(seedText);
  const next = () => {
    // sfc32: small, fast, good enough for game randomness.
    a >>>= 0; b >>>= 0; c >>>= 0; d >>>= 0;
    let t = (a + b) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    d = (d + 1) | 0;
    t = (t + d) | 0;
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let i = 0; i < 12; i++) next();
  const random = () => next();
  random.seed = seedText;
  random.next = next;
  /** An integer in [min, max], both included. */
  random.int = (min, max) => {
    const lo = Math.ceil(Number(min));
    const hi = Math.floor(Number(max));
    if (!Number.isFinite(lo) || !Number.isFinite(hi) || hi < lo) {
      throw new RangeError(`random.int needs min <= max, got ${min}, ${max}`);
    }
    return lo + Math.floor(next() * (hi - lo + 1));
  };
  random.float = (min = 0, max = 1) => Number(min) + next() * (Number(max) - Number(min));
  random.bool = (p = 0.5) => next() < p;
  random.pick = (items) => (items && items.length ? items[Math.floor(next() * items.length)] : undefined);
  random.shuffle = (items) => {
    const copy = [...(items ?? [])];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = Math.floor(next() * (i + 1));
      [copy[i], copy[j]] = [copy[j], copy[i]];
    }
    return copy;
  };
  /** Roll `count` dice of `sides` sides: { rolls, total }. */
  random.roll = (sides, count = 1) => {
    const rolls = Array.from({ length: count }, () => random.int(1, sides));
    return { rolls, total: rolls.reduce((sum, n) => sum + n, 0) };
  };
  return random;
}
