// A d20 check for a risky action, recorded for the turn's message block and the check log.

const RISKY = /\b(try|tries|pick|climb|sneak|force)\b/i;
const DC = 12;
const OUTCOMES = {
  "critical-success": { label: { zh: "大成功", en: "Critical success" }, color: "purple", critical: true },
  success: { label: { zh: "成功", en: "Success" }, color: "green", critical: false },
  failure: { label: { zh: "失败", en: "Failure" }, color: "red", critical: false },
  "critical-failure": { label: { zh: "大失败", en: "Critical failure" }, color: "amber", critical: true },
};

function outcomeOf(roll, total) {
  if (roll === 20) return "critical-success";
  if (roll === 1) return "critical-failure";
  return total >= DC ? "success" : "failure";
}

export default async function handler(ctx) {
  const said = String(ctx.inputs?.turn?.value?.playerMessage ?? ctx.playerMessage ?? "").slice(0, 120);
  if (!RISKY.test(said)) return { outcome: "success", value: { checks: 0 } };
  const turnId = String(ctx.execution?.sourceTurnId ?? ctx.turnId);
  const roll = 1 + Math.floor(ctx.random() * 20);
  const modifier = 1;
  const total = roll + modifier;
  const outcome = outcomeOf(roll, total);
  const shown = OUTCOMES[outcome];
  const check = {
    action: said,
    roll,
    modifier,
    total,
    dc: DC,
    outcome,
    outcomeLabel: shown.label,
    outcomeColor: shown.color,
    critical: shown.critical,
    rollText: `${roll} + ${modifier} = ${total} vs DC ${DC}`,
    turnId,
    seq: 1,
  };
  await ctx.pluginData.set("checks", `${turnId}-1`, check);
  await ctx.pluginData.set("message", turnId, { __turnId: turnId, checks: [check], rejectedCount: 0 });
  return { outcome: "success", value: { checks: 1, outcome } };
}
