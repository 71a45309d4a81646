import makeRollDice from "../tools/roll-dice.js";
import { checkRequest, parseNotation, roll } from "../lib/dice.js";

const USAGE = "Use /roll NdM+K, for example /roll 2d6+1 sneak attack";

// Actions have no turn seed; a player's /roll is never replayed, so the platform's
// cryptographic generator is the fair choice when the host offers no ctx.random.
function actionDraw(ctx) {
  if (typeof ctx.random === "function") return () => ctx.random();
  return () => crypto.getRandomValues(new Uint32Array(1))[0] / 2 ** 32;
}

export default function register(covel) {
  covel.registerTool(makeRollDice(covel.toolkit));

  covel.registerRpc("roll", async (payload, ctx) => {
    // A command hands {args: {...}} (Covel's invocation); a UI may send the fields bare. Both
    // are untrusted.
    const body = payload && typeof payload === "object" ? payload : {};
    const fromCommand = ctx.command?.args && typeof ctx.command.args === "object" ? ctx.command.args : null;
    const args = body.args && typeof body.args === "object" ? body.args : (fromCommand ?? body);
    const sides = Number.isInteger(ctx.userSettings?.sides) ? ctx.userSettings.sides : 20;
    let notation = typeof args.notation === "string" ? args.notation : "";
    let label = typeof args.label === "string" ? args.label : "";
    // The earlier UI fields, {count, expression}, still read: "2" and "d8+1 sneak".
    if (!notation && Number.isInteger(Number(args.count)) && args.count !== "") notation = String(args.count ?? "");
    if (!label && typeof args.expression === "string") label = args.expression;
    // "/roll 2 d6+1" (count, then the die) reads as "2d6+1".
    const die = /^(d\d+(?:[+-]\d+)?)(?:\s+|$)/i.exec(label);
    if (/^\d+$/.test(notation) && die) {
      notation += die[1];
      label = label.slice(die[0].length);
    }
    const parsed = parseNotation(notation, sides);
    if (!parsed) {
      return { ok: false, message: `${USAGE} (not ${JSON.stringify(notation)})`, data: { code: "invalid-notation" } };
    }
    const request = { ...parsed, label: label.trim().slice(0, 80), advantage: ctx.userSettings?.advantage === true };
    const problem = checkRequest(request);
    if (problem) return { ok: false, message: `${USAGE}: ${problem}`, data: { code: "out-of-range" } };
    const result = roll(request, actionDraw(ctx));
    const message = `${result.notation}: ${result.dice.join(", ")} (total ${result.total})`;
    return { ok: true, message, data: result };
  });
}
