// Storyteller: a story paragraph from the player's message, the world and the seeded dice.
// Only ctx.random is used for chance, so a retried turn reads exactly the same.

const PLACES = [
  "under the dripping eaves of the harbor market",
  "beside a lantern that keeps guttering",
  "on the worn steps of the old customs house",
  "in the hush between two bells",
];

const TWISTS = [
  "Somewhere a door closes, softly, as if someone had been listening.",
  "A gull cries once and the crowd parts without knowing why.",
  "The wind turns, carrying the smell of tar and rain.",
  "For a heartbeat nothing moves at all.",
];

const LYRICAL_OPENINGS = [
  "The evening leans closer",
  "Light pools like spilled honey",
  "The air tastes of salt and rumor",
];

function pick(list, draw) {
  // draw() is in [0, 1); the min() guards against a host that returns exactly 1.
  return list[Math.min(list.length - 1, Math.floor(draw() * list.length))];
}

function cleanMessage(text) {
  const flat = String(text ?? "").replace(/\s+/g, " ").trim();
  if (!flat) return "";
  return flat.length > 280 ? `${flat.slice(0, 277)}...` : flat;
}

function witnessName(world, draw) {
  const characters = Array.isArray(world?.characters) ? world.characters : [];
  const others = characters.filter(
    (c) => c && typeof c.name === "string" && c.name && c.type !== "player",
  );
  if (others.length === 0) return "a stranger";
  return pick(others, draw).name;
}

/** @type {import("@covel/plugin-handlers-utils").PluginFunctionHandler} */
export default async function handler(ctx) {
  if (typeof ctx.random !== "function") {
    return { outcome: "failed", error: "ctx.random is not available; the storyteller only uses seeded randomness" };
  }
  const draw = () => ctx.random();
  const style = ctx.userSettings?.style === "lyrical" ? "lyrical" : "terse";
  // A turn that only answers a form carries the hub's summary of the answer as its message
  // ("[Player input] <title>: ..."), not words the player spoke: narrate no deed then, rather
  // than reading the summary back as "You [Player input] ...".
  const actions = Array.isArray(ctx.playerActions) ? ctx.playerActions : [];
  const answersOnly = actions.length > 0 && actions.every((a) => a?.kind === "form");
  const message = answersOnly ? "" : cleanMessage(ctx.playerMessage);
  const place = pick(PLACES, draw);
  const witness = witnessName(ctx.world, draw);
  const twist = pick(TWISTS, draw);

  // "I open the gate." reads as "You open the gate" in second person.
  const action = message.replace(/^I\s+/i, "").replace(/[.!?]+$/, "");
  const deed = action ? `You ${action}` : answersOnly ? "You take it all in" : "You wait";
  const sentences =
    style === "lyrical"
      ? [`${pick(LYRICAL_OPENINGS, draw)} ${place}.`, `${deed}, and ${witness} watches with bright, unreadable eyes.`, twist]
      : [`${deed} ${place}.`, `${witness} sees it.`, twist];

  return { outcome: "success", value: { narrativeOutput: sentences.join(" "), style } };
}
