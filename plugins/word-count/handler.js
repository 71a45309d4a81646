// Word counts of one turn, from the kernel's turn digest, plus running totals.

export function countWords(text) {
  // Latin words by whitespace; each CJK character counts as one word.
  const source = String(text ?? "");
  const cjk = (source.match(/[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]/g) ?? []).length;
  const rest = source.replace(/[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]/g, " ");
  return cjk + rest.split(/\s+/).filter((w) => /[\p{L}\p{N}]/u.test(w)).length;
}

/** @type {import("@covel/plugin-handlers-utils").PluginFunctionHandler} */
export default async function handler(ctx) {
  const digest = ctx.inputs?.turn?.value ?? {};
  const playerWords = countWords(digest.playerMessage ?? ctx.playerMessage);
  const storyWords = countWords(digest.narrativeText);

  const totals = (await ctx.pluginData.get("totals", "session")) ?? { turns: 0, playerWords: 0, storyWords: 0 };
  const next = {
    turns: totals.turns + 1,
    playerWords: totals.playerWords + playerWords,
    storyWords: totals.storyWords + storyWords,
  };
  await ctx.pluginData.set("totals", "session", next);
  return { outcome: "success", value: { playerWords, storyWords, totals: next } };
}
