import { makeBreakOath, makeSwearOath } from "../tools/oaths.js";

// The tools this package never lets a model run, whoever's runtime asks.
const FORBIDDEN = new Set(["break-oath"]);
// What the observer saw, per session: the tool calls that passed the guard.
const seen = new Map();

export default function register(covel) {
  covel.registerTool(makeSwearOath(covel.toolkit));
  covel.registerTool(makeBreakOath(covel.toolkit));

  // Phase pre: runs before every normal-phase hook, so a refused call is never observed.
  covel.registerHook(
    "PreToolUse",
    async (_ctx, payload) => {
      const name = payload?.toolCall?.name;
      return FORBIDDEN.has(name) ? { action: "abort", reason: `an oath keeper never calls ${name}` } : { action: "continue" };
    },
    { enforce: "pre" },
  );

  covel.on("PreToolUse", async (ctx, payload) => {
    const list = seen.get(ctx.sessionId) ?? [];
    list.push({ tool: payload?.toolCall?.name ?? null, runtimeId: payload?.runtimeId ?? null });
    seen.set(ctx.sessionId, list);
    return { action: "continue" };
  });

  covel.registerRpc("seen-calls", async (_payload, ctx) => ({ ok: true, data: seen.get(ctx.sessionId) ?? [] }));
}
