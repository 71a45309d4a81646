export default async function handler(ctx) {
  const note = String(ctx.inputs?.turn?.value?.playerMessage ?? "");
  await ctx.pluginData.set("ledger", "last", { turn: ctx.logicalTurn ?? 0, note });
  return { outcome: "success", value: { noted: note.length } };
}
