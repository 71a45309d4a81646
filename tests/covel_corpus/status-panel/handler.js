// The status after this turn: running costs stamina, resting gives some back.

export default async function handler(ctx) {
  const digest = ctx.inputs?.turn?.value ?? {};
  const said = String(digest.playerMessage ?? ctx.playerMessage ?? "").slice(0, 200);
  const before = (await ctx.pluginData.get("status", "current")) ?? { stamina: 10 };
  let stamina = before.stamina;
  if (/\brun\b/i.test(said)) stamina -= 3;
  if (/\brest\b/i.test(said)) stamina += 2;
  stamina = Math.max(0, Math.min(10, stamina));
  await ctx.pluginData.set("status", "current", { turn: ctx.logicalTurn ?? 1, lastAction: said, stamina });
  // Low stamina is announced as a domain event: the slot previews it while the turn runs.
  const events = stamina <= 3 ? [{ topic: "status.alert", payload: { stamina } }] : [];
  return { outcome: "success", value: { stamina }, effects: { events } };
}
