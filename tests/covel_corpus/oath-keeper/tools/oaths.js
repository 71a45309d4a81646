import { makeProposal } from "@covel/plugin-handlers-utils";

const OATH_ID = /^[a-z0-9]+(-[a-z0-9]+)*$/;

function oathTool({ tool, z, withPendingProposals }, name, description, broken) {
  return tool({
    name,
    description,
    parameters: z.object({
      id: z.string().regex(OATH_ID).max(64),
      text: z.string().trim().min(1).max(300),
    }),
    async execute(params, context) {
      const value = broken ? { id: params.id, text: params.text, broken: true } : { id: params.id, text: params.text };
      const proposal = makeProposal(context, new Date().toISOString(), "plugin.data", { namespace: "oaths", key: params.id, value });
      return withPendingProposals({ id: params.id, broken }, [proposal]);
    },
  });
}

export const makeSwearOath = (toolkit) => oathTool(toolkit, "swear-oath", "Write down an oath the story swore.", false);
// The guard hook refuses every call of this one before it runs.
export const makeBreakOath = (toolkit) => oathTool(toolkit, "break-oath", "Mark an oath as broken.", true);
