import { checkRequest, roll } from "./lib/dice.js";

/** @type {import("@covel/plugin-handlers-utils").PluginFunctionHandler} */
export default async function handler(ctx) {
  if (typeof ctx.random !== "function") {
    return { outcome: "failed", error: "ctx.random is not available; dice only use seeded randomness" };
  }
  const payload = ctx.manualPayload ?? {};
  const settingsSides = Number.isInteger(ctx.userSettings?.sides) ? ctx.userSettings.sides : 20;
  const request = {
    count: payload.count ?? 1,
    sides: payload.sides ?? settingsSides,
    modifier: payload.modifier ?? 0,
    label: typeof payload.label === "string" ? payload.label.slice(0, 80) : "",
    advantage: ctx.userSettings?.advantage === true,
  };
  const problem = checkRequest(request);
  if (problem) return { outcome: "failed", error: problem };

  // A retried turn keeps its first roll: the key is the turn the roll belongs to.
  const turnKey = ctx.execution?.sourceTurnId ?? ctx.turnId ?? "current";
  const earlier = await ctx.pluginData.get("rolls", turnKey);
  if (earlier) return { outcome: "success", value: earlier };

  const result = { ...roll(request, () => ctx.random()), turnId: String(turnKey) };
  await ctx.pluginData.set("rolls", turnKey, result);
  return { outcome: "success", value: result };
}
