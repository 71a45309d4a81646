// The host's implementation of `@covel/plugin-handlers-utils`: what plugin code imports by name.
// Every export of Covel's SDK index with the same signatures and results (learned from Covel's
// public source and tests, written here anew), plus the toolkit pieces the spec names
// (withModelView, ToolError, tool). No dependencies besides zod 4, the same instance plugins get.
import { randomUUID } from "node:crypto";
import { z } from "zod";

export * from "./sdk/locale.mjs";
export * from "./sdk/text.mjs";
export * from "./sdk/review.mjs";
export * from "./sdk/order.mjs";

/** A coded tool failure; the host turns it into a failure the model can read. */
export class ToolError extends Error {
  constructor(code, message, options = {}) {
    super(String(message ?? code));
    this.name = "ToolError";
    this.code = String(code);
    if (options && options.hint !== undefined) this.hint = String(options.hint);
    if (options && options.details !== undefined) this.details = options.details;
  }
}

/** Thrown by a tool() module when the model's arguments fail the zod schema. */
export class ToolValidationError extends Error {
  constructor(toolName, zodError) {
    super(`Invalid arguments for tool "${toolName}"`);
    this.name = "ToolValidationError";
    this.code = "invalid_tool_arguments";
    this.details = zodError.issues.map((issue) => ({
      path: issue.path.length ? issue.path.join(".") : "(root)",
      message: issue.message,
    }));
  }
}

const TOOL_RESULT = "covel.tool-result";

function isToolResult(value) {
  return value !== null && typeof value === "object" && value.kind === TOOL_RESULT;
}

export function getToolContent(value) {
  return isToolResult(value) ? value.content : value;
}

export function getPendingProposals(value) {
  return isToolResult(value) ? value.pendingProposals : [];
}

export function getEmittedEvents(value) {
  return isToolResult(value) ? value.emittedEvents : undefined;
}

export function getModelView(value) {
  return isToolResult(value) ? value.modelView : undefined;
}

// A new result from parts; fields stay plain and enumerable so spread and JSON keep them.
function toolResult(content, pendingProposals, emittedEvents, modelView) {
  const out = { kind: TOOL_RESULT, content, pendingProposals: [...(pendingProposals ?? [])] };
  if (emittedEvents) out.emittedEvents = [...emittedEvents];
  if (modelView !== undefined) out.modelView = modelView;
  return out;
}

/**
 * The content with exactly these write requests, as Covel's: the proposals replace any the
 * argument carried; its events (and the hub's model view) are kept. Never mutates its input.
 */
export function withPendingProposals(content, pendingProposals) {
  return toolResult(getToolContent(content), pendingProposals, getEmittedEvents(content), getModelView(content));
}

/** The result with exactly these events, keeping its proposals (and model view). */
export function withEmittedEvents(result, emittedEvents) {
  return toolResult(getToolContent(result), getPendingProposals(result), emittedEvents ?? [], getModelView(result));
}

/** Choose what the model reads (summary and/or data) without changing the content code sees. */
export function withModelView(result, view) {
  const modelView = {};
  if (view && view.summary !== undefined) modelView.summary = String(view.summary);
  if (view && view.data !== undefined) modelView.data = view.data;
  return toolResult(getToolContent(result), getPendingProposals(result), getEmittedEvents(result), modelView);
}

/**
 * makeProposal(ctx, now, type, payload): a write request with a fresh UUID, the source and turn
 * taken from ctx and `now` as its timestamp (an ISO string, as Covel's; a Date or epoch number
 * is turned into one).
 */
export function makeProposal(context, now, type, payload) {
  if (!context || typeof context !== "object") throw new TypeError("makeProposal needs the call context");
  if (typeof type !== "string" || !type) throw new TypeError("makeProposal needs a proposal type");
  return {
    id: randomUUID(),
    type,
    source: { pluginId: context.pluginId, runtimeId: context.runtimeId ?? context.pluginId },
    turnId: context.turnId ?? null,
    sessionId: context.sessionId ?? null,
    payload,
    timestamp: typeof now === "string" ? now : new Date(now ?? Date.now()).toISOString(),
  };
}

/** JSON Schema of a tool's parameters for the model: zod 4's own converter, input side. */
export function zodToJsonSchema(schema) {
  try {
    const out = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" });
    delete out.$schema;
    return out;
  } catch {
    return {};
  }
}

// A tool call's own limit: timeoutMs when the tool declares one, else this default.
export const DEFAULT_TOOL_TIMEOUT_MS = 30000;
// No single tool call may outlast an agent runtime's default time limit (120000 ms).
export const MAX_TOOL_TIMEOUT_MS = 120000;

/** Why a tool's timeoutMs is unusable, or null when it is absent or fine. */
export function toolTimeoutProblem(name, timeoutMs) {
  if (timeoutMs === undefined || timeoutMs === null) return null;
  if (Number.isInteger(timeoutMs) && timeoutMs >= 1 && timeoutMs <= MAX_TOOL_TIMEOUT_MS) return null;
  const got = typeof timeoutMs === "string" ? JSON.stringify(timeoutMs) : String(timeoutMs);
  return `tool "${name}": timeoutMs must be an integer from 1 to ${MAX_TOOL_TIMEOUT_MS} (ms), got ${got}`;
}

/** Define a tool: validates the model's arguments with its zod schema before execute runs. */
export function tool(definition) {
  if (!definition || typeof definition.name !== "string" || !definition.name) {
    throw new TypeError("tool() needs a name");
  }
  if (typeof definition.execute !== "function") {
    throw new TypeError(`tool "${definition.name}" needs an execute function`);
  }
  const parameters = definition.parameters;
  if (!parameters || typeof parameters.safeParse !== "function") {
    throw new TypeError(`tool "${definition.name}" needs zod parameters`);
  }
  const timeoutProblem = toolTimeoutProblem(definition.name, definition.timeoutMs);
  if (timeoutProblem) throw new RangeError(timeoutProblem);
  return {
    _type: "covel-tool",
    name: definition.name,
    description: String(definition.description ?? ""),
    annotations: definition.annotations ?? {},
    timeoutMs: definition.timeoutMs,
    parametersSchema: parameters,
    jsonSchema: zodToJsonSchema(parameters),
    async execute(params, context) {
      const parsed = parameters.safeParse(params ?? {});
      if (!parsed.success) throw new ToolValidationError(definition.name, parsed.error);
      return definition.execute(parsed.data, context);
    },
  };
}


// --- IDs ---

const SLUG_LIMIT = 32;

/** The label's ASCII letters and digits, lower case, joined by hyphens, at most 32 characters. */
export function wordSlug(label) {
  return (String(label ?? "").toLowerCase().match(/[a-z0-9]+/g) ?? [])
    .join("-")
    .slice(0, SLUG_LIMIT)
    .replace(/-$/, "");
}

// 8 hex digits; reproducible when the caller passes ctx.random (the spec's fourth argument).
function hexPart(random) {
  if (random && typeof random.int === "function") {
    let text = "";
    for (let i = 0; i < 8; i++) text += random.int(0, 16).toString(16);
    return text;
  }
  return randomUUID().replaceAll("-", "").slice(0, 8);
}

/** prefix + the label's words + 8 hex (`npc-lin-yao-3fa9c1d2`). */
export function shortId(prefix, label, _sessionId, random) {
  return [prefix, wordSlug(label), hexPart(random)].filter(Boolean).join("-");
}

export function shortIdBatch(prefix, labels, sessionId, random) {
  return [...(labels ?? [])].map((label) => shortId(prefix, label, sessionId, random));
}

/**
 * A word ID for a namespace the caller can see whole: `npc-lin-yao`, then `-2`, `-3`… while
 * taken. A label without ASCII words gets 8 random hex digits instead.
 */
export function wordId(prefix, label, taken) {
  const has = (id) => Boolean(taken?.has?.(id));
  const slug = wordSlug(label);
  if (!slug) {
    let id;
    do id = `${prefix}-${hexPart()}`;
    while (has(id));
    return id;
  }
  const base = `${prefix}-${slug}`;
  let id = base;
  for (let n = 2; has(id); n++) id = `${base}-${n}`;
  return id;
}

// --- who the player is ---

/** Every character ID bound to a seat, the current one first. */
export function seatCharacterIds(seat, characters, seats) {
  const found = typeof seat === "string" ? (seats ?? []).find((s) => s?.id === seat) : seat;
  if (!found) return [];
  const ids = [];
  const push = (id) => {
    if (typeof id === "string" && id && !ids.includes(id)) ids.push(id);
  };
  push(found.currentCharacterId ?? found.characterId);
  for (const id of found.characterIds ?? []) push(id);
  for (const character of characters ?? []) {
    if (character?.seatId === found.id) push(character.id);
  }
  return ids;
}

/** The character the player acts as: the action's actor, else the primary seat's current one. */
export function actingCharacterOf(playerActions, characters, seats) {
  const list = characters ?? [];
  const byId = (id) => (typeof id === "string" ? list.find((c) => c?.id === id) : undefined);
  for (const action of playerActions ?? []) {
    const actor = byId(action?.actorId ?? action?.characterId);
    if (actor) return actor;
  }
  const allSeats = seats ?? [];
  const primary = allSeats.find((s) => s?.primary) ?? allSeats.find((s) => s?.role === "player") ?? allSeats[0];
  if (!primary) return undefined;
  return byId(primary.currentCharacterId ?? primary.characterId ?? seatCharacterIds(primary, list, allSeats)[0]);
}
