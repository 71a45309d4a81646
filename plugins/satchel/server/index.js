import makeAdjustGold from "../tools/adjust-gold.js";
import { ITEM_ID, itemIdFor } from "../lib/items.js";

export default function register(covel) {
  const { z } = covel.toolkit;
  covel.registerTool(makeAdjustGold(covel.toolkit));

  const change = z.object({
    op: z.enum(["add", "remove"]),
    name: z.string().trim().min(1).max(60).describe("Item name as the story says it"),
    quantity: z.number().int().min(1).max(999).default(1),
  });

  // A write service: its writes are staged with the caller's work and commit with it.
  covel.registerService({
    name: "change-items",
    contract: "inventory.items@1",
    access: "write",
    modelFacing: true,
    description: "Add items to, or remove items from, the player's satchel. Quantities stack by item name.",
    input: z.object({ changes: z.array(change).min(1).max(8) }),
    output: z.object({
      applied: z.array(z.object({ id: z.string(), name: z.string(), quantity: z.number().int() })),
      skipped: z.array(z.object({ name: z.string(), reason: z.string() })),
    }),
    async handler(input, ctx) {
      if (!ctx.pluginData) {
        // The spec lets a write service stage writes with the caller's work; without a
        // writer from the host there is nothing safe to do.
        throw new Error("inventory.items@1 is a write service, but this host gave it no ctx.pluginData");
      }
      const applied = [];
      const skipped = [];
      for (const item of input.changes) {
        const id = itemIdFor(item.name);
        if (!ITEM_ID.test(id)) {
          skipped.push({ name: item.name, reason: "the name has no letters or digits" });
          continue;
        }
        const current = await ctx.pluginData.get("items", id);
        const held = Number.isInteger(current?.quantity) ? current.quantity : 0;
        if (item.op === "add") {
          if (current) await ctx.pluginData.update("items", id, [{ op: "inc", path: "/quantity", by: item.quantity }]);
          else await ctx.pluginData.set("items", id, { id, name: item.name, quantity: item.quantity });
          applied.push({ id, name: current?.name ?? item.name, quantity: held + item.quantity });
        } else if (held === 0) {
          skipped.push({ name: item.name, reason: "not in the satchel" });
        } else if (item.quantity >= held) {
          await ctx.pluginData.update("items", id, [{ op: "delete" }]);
          applied.push({ id, name: current.name, quantity: 0 });
        } else {
          await ctx.pluginData.update("items", id, [{ op: "inc", path: "/quantity", by: -item.quantity, min: 0 }]);
          applied.push({ id, name: current.name, quantity: held - item.quantity });
        }
      }
      return { applied, skipped };
    },
  });
}
