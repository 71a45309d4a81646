import { makeProposal } from "@covel/plugin-handlers-utils";

// Kept in step with schemas/note.schema.json, which validates imported notes.
const NOTE_ID = /^[a-z0-9]+(-[a-z0-9]+)*$/;

export default function makeSaveNote({ tool, z, withPendingProposals, withModelView }) {
  return tool({
    name: "save-note",
    description: "Save one short fact that this turn's narrative states.",
    // Writing the same id twice leaves one record, so a retry is harmless.
    annotations: { idempotent: true },
    parameters: z.object({
      id: z.string().regex(NOTE_ID).max(64).describe("Kebab-case key naming the fact, e.g. gate-is-locked"),
      text: z.string().trim().min(1).max(300).describe("The fact, in one plain sentence"),
    }),
    async execute(params, context) {
      const value = { id: params.id, text: params.text };
      const proposal = makeProposal(context, new Date().toISOString(), "plugin.data", {
        namespace: "notes",
        key: params.id,
        value,
      });
      return withModelView(withPendingProposals({ id: params.id }, [proposal]), {
        summary: `Queued note ${params.id}.`,
      });
    },
  });
}
