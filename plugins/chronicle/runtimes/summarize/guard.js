// Guard of chronicle/summarize: skip the model call when the turn told no story.

/** @type {import("@covel/plugin-handlers-utils").PluginAgentGuard} */
export default async function guard(ctx) {
  const text = String(ctx.inputs?.digest?.value?.narrativeText ?? "").trim();
  return text ? { skip: false } : { skip: true, reason: "the turn has no story text to summarise" };
}
