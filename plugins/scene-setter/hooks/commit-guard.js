import { MAX_DETAILS } from "../lib/scene.js";

// PreStateCommit, phase pre: refuse a commit that would store an oversized scene of ours,
// whoever proposed it, before other plugins' normal-phase hooks see the batch.
export function guardSceneWrites(ctx, payload) {
  const proposals = Array.isArray(payload?.proposals) ? payload.proposals : [];
  for (const proposal of proposals) {
    const data = proposal?.payload;
    if (proposal?.type !== "plugin.data" || proposal?.source?.pluginId !== ctx.pluginId) continue;
    if (data?.namespace !== "scene") continue;
    const details = data?.value?.details;
    if (typeof details === "string" && details.length > MAX_DETAILS) {
      return { action: "abort", reason: `scene details are ${details.length} characters; at most ${MAX_DETAILS}` };
    }
  }
  return { action: "continue" };
}

// TurnStart: nothing to change; the hook exists to show a normal-phase registration.
export function noteTurnStart() {
  return { action: "continue" };
}
