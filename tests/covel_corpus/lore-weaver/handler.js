import { makeProposal, withPendingProposals, wordSlug } from "@covel/plugin-handlers-utils";

const DECLARED = /Lore:\s*([^:]+):\s*(.+)/;

function entriesOf(ctx, message) {
  const entries = [
    {
      id: "weaver-note",
      keys: [],
      content: `The weaver has listened for ${ctx.logicalTurn} turn(s).`,
      strategy: "constant",
      insertionOrder: 10,
    },
  ];
  const declared = DECLARED.exec(message);
  if (declared) {
    const name = declared[1].trim();
    entries.push({ id: wordSlug(name) || "lore", keys: [name], content: declared[2].trim(), strategy: "selective" });
  }
  // "claim" tries to rewrite an entry of another owner: the commit refuses it.
  if (message.includes("claim")) {
    entries.push({ id: "harbor-law", content: "Stolen.", strategy: "constant", owner: { kind: "plugin", pluginId: "town-crier" } });
  }
  return entries;
}

/** @type {import("@covel/plugin-handlers-utils").PluginFunctionHandler} */
export default async function handler(ctx) {
  const message = String(ctx.playerMessage ?? "");
  const known = (ctx.world?.lorebook ?? []).filter((entry) => entry.pluginId === ctx.pluginId).map((entry) => entry.id);
  const proposal = makeProposal(ctx, new Date().toISOString(), "lorebook.upsert", { entries: entriesOf(ctx, message) });
  return withPendingProposals({ outcome: "success", value: { known } }, [proposal]);
}
