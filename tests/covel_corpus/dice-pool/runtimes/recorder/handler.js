import { outcomeOf } from "../../lib/pool.js";

export default async function recorder(ctx) {
  const dice = ctx.inputs?.dicePool?.value;
  const checks = ctx.triggerEvent?.data?.checks;
  if (!Array.isArray(dice) || !Array.isArray(checks)) {
    return { outcome: "failed", error: "no dice pool or no checks to record" };
  }
  const kept = [];
  checks.forEach((check, index) => {
    const roll = dice[index];
    if (!check || check.roll !== roll) return;
    if (check.total !== roll + check.modifier) return;
    if (check.outcome !== outcomeOf(roll, check.modifier, check.dc)) return;
    kept.push({ namespace: "checks", key: `${ctx.turnId}-${index}`, value: { ...check, turnId: ctx.turnId } });
  });
  return { outcome: "success", value: { recorded: kept.length, of: checks.length }, effects: { pluginData: kept } };
}
