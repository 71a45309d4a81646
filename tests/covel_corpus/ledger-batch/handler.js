import { makeProposal, withPendingProposals } from "@covel/plugin-handlers-utils";

// "audit" asks to write the framework's job namespace: the commit must refuse the batch whole.
const FORGED = "_runtime_jobs";

/** @type {import("@covel/plugin-handlers-utils").PluginFunctionHandler} */
export default async function handler(ctx) {
  const turn = ctx.logicalTurn;
  const message = String(ctx.playerMessage ?? "");
  const words = message.split(/\s+/).filter(Boolean).length;
  const now = new Date().toISOString();
  const items = [
    { namespace: "ledger", key: `turn-${turn}`, value: { turn, words } },
    { namespace: "ledger", key: "latest", value: { turn, message } },
    { namespace: "tallies", key: "turns", value: turn },
  ];
  if (message.includes("audit")) items.push({ namespace: FORGED, key: "fake", value: { status: "done" } });
  const proposals = [makeProposal(ctx, now, "plugin.data.batch", { items })];
  if (turn > 1) {
    proposals.push(makeProposal(ctx, now, "plugin.data.delete", { namespace: "ledger", key: `turn-${turn - 1}` }));
  }
  return withPendingProposals({ outcome: "success", value: { turn, items: items.length } }, proposals);
}
