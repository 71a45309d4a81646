import { labelText, pickLocaleText, translate } from "@covel/plugin-handlers-utils";

/** @type {import("@covel/plugin-handlers-utils").PluginFunctionHandler} */
export default async function handler(ctx) {
  const title = translate(ctx, "Hint for turn {turn}", { turn: ctx.logicalTurn });
  const hint = translate(ctx, "Look around before you move.");
  return {
    outcome: "success",
    value: {
      locale: ctx.locale,
      title,
      hint,
      // Every language the package ships, for a client that picks one itself.
      label: labelText(ctx, "Hints"),
      greeting: pickLocaleText(ctx.locale, "欢迎回来", "Welcome back"),
      catalogued: Object.keys(ctx.messages?.labels ?? {}).length,
    },
    effects: { notifications: [{ level: "info", title, message: hint }] },
  };
}
