import makeRollDice from "../tools/roll-dice.js";
import { checkRequest, parseExpression, roll } from "../lib/dice.js";

// Actions have no turn seed; a player's /roll is never replayed, so the platform's
// cryptographic generator is the fair choice when the host offers no ctx.random.
function actionDraw(ctx) {
  if (typeof ctx.random === "function") return () => ctx.random();
  return () => crypto.getRandomValues(new Uint32Array(1))[0] / 2 ** 32;
}

export default function register(covel) {
  covel.registerTool(makeRollDice(covel.toolkit));

  covel.registerRpc("roll", async (payload, ctx) => {
    // Arguments arrive from the command parser or a UI: both are untrusted.
    const args = ctx.command?.args ?? (payload && typeof payload === "object" ? payload : {});
    const count = typeof args.count === "string" ? Number(args.count) : args.count;
    const sides = Number.isInteger(ctx.userSettings?.sides) ? ctx.userSettings.sides : 20;
    const parsed = parseExpression(args.expression, sides);
    const request = { count, ...parsed, advantage: ctx.userSettings?.advantage === true };
    const problem = checkRequest(request);
    if (problem) return { ok: false, error: problem };
    return { ok: true, data: roll(request, actionDraw(ctx)) };
  });
}
