import { reportFor } from "./lib/almanac.js";

/** @type {import("@covel/plugin-handlers-utils").PluginFunctionHandler} */
export default async function handler(ctx) {
  // Offline on purpose: the declared HTTP permissions exercise approval only.
  return { outcome: "success", value: reportFor(ctx.userSettings?.city) };
}
