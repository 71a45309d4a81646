import { MOODS, TIMES, openingScene } from "./lib/scene.js";

/** @type {import("@covel/plugin-handlers-utils").PluginFunctionHandler} */
export default async function handler(ctx) {
  if (typeof ctx.random !== "function") {
    return { outcome: "failed", error: "ctx.random is not available; the opening scene is drawn from seeded randomness" };
  }
  // A rerun of setup (a new package version) keeps the scene the table already has.
  const existing = await ctx.pluginData.get("scene", "current");
  const scene = existing ?? openingScene(() => ctx.random());
  if (!existing) await ctx.pluginData.set("scene", "current", scene);

  const form = {
    type: "form",
    interactionId: `scene-form-${ctx.turnId ?? "setup"}`,
    title: "Adjust the opening scene",
    validation: { name: "scene-form" },
    fields: [
      { type: "text", name: "place", label: "Place", required: true, default: scene.place },
      { type: "select", name: "mood", label: "Mood", options: MOODS, default: scene.mood },
      { type: "select", name: "time", label: "Time of day", options: TIMES, default: scene.time },
      { type: "textarea", name: "details", label: "Details", default: scene.details ?? "" },
    ],
    submitLabel: "Set the scene",
  };
  return {
    outcome: "success",
    value: scene,
    effects: { interactions: [form], events: [{ topic: "scene.set", data: scene }] },
    completion: "done",
  };
}
