// Word index: capitalised words of the turn's story text -> turns that mention them.

const MAX_TURNS_PER_WORD = 50;
const MAX_WORDS_PER_TURN = 40;
// Sentence openers that are capitalised without being names.
const COMMON = new Set(["The", "A", "An", "And", "But", "You", "Your", "It", "He", "She", "They", "We", "I", "In", "On", "At", "As", "For", "Then"]);

export function namesIn(text) {
  const found = new Set();
  for (const match of String(text ?? "").matchAll(/\b[A-Z][a-z]{2,30}\b/g)) {
    if (!COMMON.has(match[0])) found.add(match[0]);
    if (found.size >= MAX_WORDS_PER_TURN) break;
  }
  return [...found].sort();
}

/** @type {import("@covel/plugin-handlers-utils").PluginFunctionHandler} */
export default async function handler(ctx) {
  const digest = ctx.inputs?.digest?.value ?? {};
  const turnId = String(ctx.execution?.sourceTurnId ?? ctx.turnId ?? digest.turnId ?? "unknown");
  const names = namesIn(digest.narrativeText);
  for (const name of names) {
    const key = name.toLowerCase();
    const entry = (await ctx.pluginData.get("index", key)) ?? { word: name, turns: [] };
    if (!entry.turns.includes(turnId) && entry.turns.length < MAX_TURNS_PER_WORD) {
      await ctx.pluginData.set("index", key, { word: entry.word, turns: [...entry.turns, turnId] });
    }
  }
  return { outcome: "success", value: { turnId, names } };
}
