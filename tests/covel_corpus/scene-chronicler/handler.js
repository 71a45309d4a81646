import { makeProposal, withPendingProposals, wordSlug } from "@covel/plugin-handlers-utils";

const ENTERS = /Enter ([A-Z][\w ]*?), (.+)/;
const HERO = /Enter ([A-Z][\w ]*?) as the hero/;
const JOINS = /([A-Z]\w*) becomes a companion/;

/** The characters the chronicle knows: the world's and the session's, as the turn began. */
function castOf(ctx) {
  return (ctx.world?.characters ?? []).map((c) => `${c.id}:${c.name}:${c.type}:${c.version ?? 1}`);
}

/** The world-model writes a message asks for. */
function characterUpserts(ctx, message) {
  const hero = HERO.exec(message);
  if (hero) {
    // Two player characters in one session: Covel's world checks refuse the second.
    return [
      { id: "lead", name: "Lead", type: "player" },
      { id: wordSlug(hero[1]), name: hero[1].trim(), type: "player" },
    ];
  }
  const enters = ENTERS.exec(message);
  if (enters) {
    return [{ id: wordSlug(enters[1]), name: enters[1].trim(), type: "npc", description: enters[2].trim() }];
  }
  const joins = JOINS.exec(message);
  if (joins) {
    const live = (ctx.world?.characters ?? []).find((c) => c.id === wordSlug(joins[1]));
    if (live) {
      return [{ id: live.id, name: live.name, fields: { role: "companion" }, expectedVersion: live.version ?? 1 }];
    }
  }
  return [];
}

function chronicleLine(ctx, message) {
  const answer = (ctx.playerActions ?? []).find((action) => action.interactionId === "scene-title");
  if (answer) return `Chronicle, turn ${ctx.logicalTurn}: the scene is called "${answer.fields.title}".`;
  return `Chronicle, turn ${ctx.logicalTurn}: ${message.split(/\s+/).filter(Boolean).length} word(s) spoken.`;
}

/** @type {import("@covel/plugin-handlers-utils").PluginFunctionHandler} */
export default async function handler(ctx) {
  const message = String(ctx.playerMessage ?? "");
  const now = new Date().toISOString();
  const cast = castOf(ctx);
  const proposals = [
    makeProposal(ctx, now, "narrative.append", { content: chronicleLine(ctx, message), kind: "plugin" }),
    makeProposal(ctx, now, "ui.render", {
      layout: "stream",
      parts: [
        { id: "scene", type: "scene", status: "success", content: { turn: ctx.logicalTurn, cast } },
        { id: "line", type: "text", status: "success", content: message },
      ],
    }),
    ...characterUpserts(ctx, message).map((upsert) => makeProposal(ctx, now, "character.upsert", upsert)),
  ];
  if (ctx.logicalTurn === 1) {
    proposals.push(
      makeProposal(ctx, now, "interaction.request", {
        interactionId: "scene-title",
        type: "form",
        title: "Name this scene",
        data: { fields: [{ name: "title", label: "Scene title", type: "text", required: true }] },
      }),
    );
  }
  return withPendingProposals({ outcome: "success", value: { cast } }, proposals);
}
