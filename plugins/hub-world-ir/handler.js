// WorldIR v1 of one turn, from the world's characters and the turn's text: no model.
import { mentionedCharacterIds } from "@covel/plugin-handlers-utils";

const MAX_ENTITIES = 32;
const MAX_TEXT = 500;

function clip(text, limit) {
  const value = String(text ?? "").trim();
  return value.length > limit ? `${value.slice(0, limit - 1)}…` : value;
}

export default async function handler(ctx) {
  const digest = ctx.inputs?.turn?.value ?? {};
  const said = String(digest.playerMessage ?? ctx.playerMessage ?? "");
  const story = String(digest.narrativeText ?? "");
  const characters = Array.isArray(ctx.world?.characters) ? ctx.world.characters : [];
  const named = new Set(mentionedCharacterIds(`${said}\n${story}`, characters));
  const entities = characters
    .filter((c) => named.has(c.id))
    .slice(0, MAX_ENTITIES)
    .map((c) => {
      const entity = { id: String(c.id), type: "character", name: String(c.name || c.id) };
      const description = clip(c.description, MAX_TEXT);
      if (description) entity.description = description;
      return entity;
    });
  const events = [];
  if (said.trim()) {
    const event = { id: "turn-action", type: "interaction", description: clip(said, MAX_TEXT) };
    if (entities.length) event.participantIds = entities.map((e) => e.id);
    events.push(event);
  }
  const facts = { schemaVersion: 1, entities, relations: [], events, statements: [] };
  const summary = clip(story, 300);
  if (summary) facts.summary = summary;
  return { outcome: "success", value: facts };
}
