// Archive: copy the committed chapter summary into the chapters namespace.

/** @type {import("@covel/plugin-handlers-utils").PluginFunctionHandler} */
export default async function handler(ctx) {
  const summary = ctx.inputs?.summary?.value;
  if (!summary || typeof summary.summary !== "string") {
    return { outcome: "failed", error: "no committed chapter-summary to archive" };
  }
  const turnId = String(ctx.execution?.sourceTurnId ?? ctx.turnId ?? "unknown");
  const chapter = {
    id: turnId,
    title: String(summary.title ?? "Untitled").slice(0, 120),
    summary: summary.summary.slice(0, 600),
    names: Array.isArray(summary.names) ? summary.names.filter((n) => typeof n === "string").slice(0, 10) : [],
  };
  await ctx.pluginData.set("chapters", turnId, chapter);
  return { outcome: "success", value: chapter };
}
