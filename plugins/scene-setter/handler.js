import { MOODS, TIMES, openingScene, sceneFromForm, sceneProblems } from "./lib/scene.js";

const FORM_PREFIX = "scene-form-";

/** @type {import("@covel/plugin-handlers-utils").PluginFunctionHandler} */
export default async function handler(ctx) {
  if (typeof ctx.random !== "function") {
    return { outcome: "failed", error: "ctx.random is not available; the opening scene is drawn from seeded randomness" };
  }
  // The player answered our form: the hub runs this runtime again on that turn, and the answer
  // becomes the scene. The validator already checked the values; check again, as a form answer
  // is player input and this write is ours.
  const answer = (ctx.playerActions ?? []).find(
    (action) => action?.kind === "form" && String(action.interactionId ?? "").startsWith(FORM_PREFIX),
  );
  if (answer) {
    const problems = sceneProblems(answer.fields);
    if (problems.length > 0) {
      return { outcome: "failed", error: problems.map((p) => `${p.field}: ${p.message}`).join(" ") };
    }
    const chosen = sceneFromForm(answer.fields);
    await ctx.pluginData.set("scene", "current", chosen);
    return {
      outcome: "success",
      value: chosen,
      effects: { events: [{ topic: "scene.set", data: chosen }] },
      completion: "done",
    };
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
