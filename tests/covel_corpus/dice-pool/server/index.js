import { acceptReceipt, acceptedReceipts, outcomeOf, poolOf } from "../lib/pool.js";

const TOPIC = "check.resolved";

function receiptOf(toolCall) {
  if (toolCall?.name !== "emit-event") return null;
  try {
    const args = JSON.parse(toolCall.arguments);
    return args?.topic === TOPIC ? args : null;
  } catch {
    return null;
  }
}

/** Covel's command dispatch hands the action {args: {...}}: read nothing else. */
function parseNotation(text) {
  const match = /^(\d*)d(\d+)$/i.exec(String(text ?? "d20").trim());
  if (!match) return null;
  const count = match[1] ? Number(match[1]) : 1;
  const sides = Number(match[2]);
  if (count < 1 || count > 100 || sides < 2 || sides > 1000) return null;
  return { count, sides };
}

export default function register(covel) {
  // The guard: a receipt whose outcomes are not the dice's is sent back with the right ones.
  covel.registerHook(
    "PreToolUse",
    async (ctx, payload) => {
      const receipt = receiptOf(payload.toolCall);
      const checks = receipt?.data?.checks;
      const dice = poolOf(ctx.sessionId, ctx.turnId);
      if (!receipt || !dice || !Array.isArray(checks)) return { action: "continue" };
      const wrong = checks.flatMap((check, index) =>
        outcomeOf(dice[index], check.modifier, check.dc) === check.outcome ? [] : [index],
      );
      if (wrong.length === 0) return { action: "continue" };
      const right = checks.map((check, index) => `check ${index + 1}: d20 ${dice[index]} -> ${outcomeOf(dice[index], check.modifier, check.dc)}`);
      return {
        action: "abort",
        reason: `check.resolved was not sent: the dice give ${right.join("; ")}. Send it again with these outcomes.`,
      };
    },
    { enforce: "pre" },
  );

  // Covel's PostToolUse result: {toolCallId, name, result, parsedResult, success}.
  covel.on("PostToolUse", async (ctx, payload) => {
    if (receiptOf(payload.toolCall) && payload.result?.success === true) acceptReceipt(ctx.sessionId, ctx.turnId);
    return { action: "continue" };
  });

  covel.registerRpc("roll", async (payload, ctx) => {
    const args = payload && typeof payload === "object" && payload.args && typeof payload.args === "object" ? payload.args : {};
    const parsed = parseNotation(args.notation ?? "d20");
    if (!parsed) return { ok: false, message: "Use NdM dice notation, for example 2d6.", data: { code: "invalid-notation" } };
    const draw = typeof ctx.random === "function" ? () => ctx.random() : Math.random;
    const rolls = Array.from({ length: parsed.count }, () => 1 + Math.floor(draw() * parsed.sides));
    const total = rolls.reduce((sum, die) => sum + die, 0);
    const notation = `${parsed.count}d${parsed.sides}`;
    return { ok: true, message: `${notation}: ${rolls.join(", ")} (total ${total})`, data: { notation, rolls, total } };
  });

  covel.registerRpc("receipts", async (_payload, ctx) => ({ ok: true, data: acceptedReceipts(ctx.sessionId) }));
}
