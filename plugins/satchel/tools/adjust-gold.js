import { makeProposal } from "@covel/plugin-handlers-utils";

export default function makeAdjustGold({ tool, z, withPendingProposals, withModelView, ToolError }) {
  return tool({
    name: "adjust-gold",
    description: "Add gold to the player's purse (positive amount) or pay gold out of it (negative amount).",
    parameters: z.object({
      amount: z.number().int().min(-10000).max(10000).refine((n) => n !== 0, "amount must not be 0"),
      reason: z.string().trim().min(1).max(120).describe("Why the gold changed hands, in a few words"),
    }),
    async execute(params, context) {
      // The store read already includes writes staged earlier in this turn.
      const row = await context.store?.getPluginData("wallet", "gold");
      const balance = Number.isInteger(row?.value) ? row.value : 0;
      if (balance + params.amount < 0) {
        throw new ToolError("insufficient-gold", `The purse holds ${balance} gold; paying ${-params.amount} is not possible.`, {
          hint: "Tell the story that the player cannot afford it.",
        });
      }
      // An operation, not a value: concurrent commits add up, and min 0 is checked
      // again at commit against the latest balance.
      const proposal = makeProposal(context, new Date().toISOString(), "plugin.data", {
        namespace: "wallet",
        key: "gold",
        ops: [{ op: "inc", by: params.amount, min: 0 }],
      });
      const expected = balance + params.amount;
      return withModelView(withPendingProposals({ balance: expected, change: params.amount }, [proposal]), {
        summary: `Gold ${params.amount > 0 ? "+" : ""}${params.amount} (${params.reason}); expected balance ${expected}.`,
      });
    },
  });
}
