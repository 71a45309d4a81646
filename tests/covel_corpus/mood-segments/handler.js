// The mood of a turn, from the player's words: danger makes it tense, anything else calm.

const TENSE = /\b(storm|fight|blood|dark|run)\b/i;

export default async function handler(ctx) {
  const digest = ctx.inputs?.turn?.value ?? {};
  const said = String(digest.playerMessage ?? ctx.playerMessage ?? "");
  const mood = TENSE.test(said) ? "tense" : "calm";
  await ctx.pluginData.set("moods", "current", { mood, turn: ctx.logicalTurn ?? 1 });
  return { outcome: "success", value: { mood } };
}
