import { makeProposal } from "@covel/plugin-handlers-utils";

const ID = /^[a-z0-9]+(-[a-z0-9]+)*$/;

function tierOf(score) {
  if (score <= -60) return "hostile";
  if (score <= -20) return "cold";
  if (score < 20) return "neutral";
  if (score < 60) return "friendly";
  return "devoted";
}

function clamp(n, low, high) {
  return Math.max(low, Math.min(high, n));
}

export default function makeAdjustAffinity({ tool, z, withPendingProposals, withModelView }) {
  const change = z.object({
    id: z.string().regex(ID).max(64).describe("The character's id from the world"),
    name: z.string().trim().min(1).max(60).describe("The character's name"),
    delta: z.number().int().min(-20).max(20).refine((n) => n !== 0, "delta must not be 0"),
    reason: z.string().trim().min(1).max(160).describe("One sentence addressed to the player"),
  });
  return tool({
    name: "adjust-affinity",
    description: "Change how much named characters like the player, with a reason per character.",
    parameters: z.object({ changes: z.array(change).min(1).max(5) }),
    async execute(params, context) {
      // Intensity 0..10 scales the cap of one turn's change: 5 keeps the model's numbers.
      const settings = context.userSettings ?? {};
      const intensity = Number.isFinite(settings.intensity) ? clamp(settings.intensity, 0, 10) : 5;
      const decay = Number.isFinite(settings.decay) ? clamp(settings.decay, 0, 1) : 0.1;
      const turn = Number.isInteger(context.turnNumber) ? context.turnNumber : null;
      const now = new Date().toISOString();
      const proposals = [];
      const results = [];
      for (const item of params.changes) {
        const row = await context.store?.getPluginData("rapport", item.id);
        const stored = Number.isInteger(row?.value?.score) ? row.value.score : 0;
        // Decay is applied lazily: a score fades toward 0 for each turn since it last changed.
        const idle = turn !== null && Number.isInteger(row?.value?.turn) ? Math.max(0, turn - row.value.turn) : 0;
        const before = Math.round(stored * (1 - decay) ** idle);
        const delta = Math.round(clamp(item.delta * (intensity / 5), -20, 20));
        const score = clamp(before + delta, -100, 100);
        const value = {
          id: item.id,
          name: item.name,
          score,
          tier: tierOf(score),
          lastDelta: delta,
          reason: item.reason,
          ...(turn === null ? {} : { turn }),
        };
        proposals.push(makeProposal(context, now, "plugin.data", { namespace: "rapport", key: item.id, value }));
        results.push({ id: item.id, name: item.name, before, score, delta });
      }
      const summary = results.map((r) => `${r.name} ${r.delta > 0 ? "+" : ""}${r.delta} -> ${r.score}`).join("; ");
      return withModelView(withPendingProposals({ changes: results }, proposals), { summary: `Queued: ${summary}.` });
    },
  });
}
