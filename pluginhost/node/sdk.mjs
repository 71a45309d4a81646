// The host's implementation of `@covel/plugin-handlers-utils`: what plugin code imports by name.
// Written for Covel Hub from the public plugin documentation; plain ES module, no dependencies
// besides zod (resolved from the hub's node_modules, the same instance plugins get).
import { randomUUID } from "node:crypto";

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

export function getModelView(value) {
  return isToolResult(value) ? value.modelView : undefined;
}

/** Content plus the writes it wants; plain enumerable fields so JSON keeps everything. */
export function withPendingProposals(content, pendingProposals) {
  const base = isToolResult(content) ? content : { kind: TOOL_RESULT, content, pendingProposals: [] };
  return {
    ...base,
    pendingProposals: [...(base.pendingProposals ?? []), ...(pendingProposals ?? [])],
  };
}

/** Choose what the model reads (summary and/or data) without changing the content code sees. */
export function withModelView(result, view) {
  const base = isToolResult(result) ? result : { kind: TOOL_RESULT, content: result, pendingProposals: [] };
  const modelView = {};
  if (view && view.summary !== undefined) modelView.summary = String(view.summary);
  if (view && view.data !== undefined) modelView.data = view.data;
  return { ...base, modelView };
}

export function withEmittedEvents(result, emittedEvents) {
  const base = isToolResult(result) ? result : { kind: TOOL_RESULT, content: result, pendingProposals: [] };
  return { ...base, emittedEvents: [...(base.emittedEvents ?? []), ...(emittedEvents ?? [])] };
}

/**
 * A write request with its ID, source and turn filled in from the tool or handler context.
 * makeProposal(context, timestamp, type, payload)
 */
export function makeProposal(context, timestamp, type, payload) {
  if (!context || typeof context !== "object") throw new TypeError("makeProposal needs the call context");
  if (typeof type !== "string" || !type) throw new TypeError("makeProposal needs a proposal type");
  return {
    id: `prop-${randomUUID()}`,
    type,
    source: { pluginId: context.pluginId, runtimeId: context.runtimeId ?? context.pluginId },
    turnId: context.turnId ?? null,
    sessionId: context.sessionId ?? null,
    payload,
    timestamp: typeof timestamp === "string" ? timestamp : new Date(timestamp ?? Date.now()).toISOString(),
  };
}

// --- zod schema to JSON Schema (the subset tool parameters use), for model tool definitions ---

function zodToJsonSchema(schema) {
  const def = schema?._def;
  if (!def) return {};
  const out = {};
  if (def.description) out.description = def.description;
  switch (def.typeName) {
    case "ZodObject": {
      const shape = typeof def.shape === "function" ? def.shape() : def.shape;
      const properties = {};
      const required = [];
      for (const [key, child] of Object.entries(shape)) {
        properties[key] = zodToJsonSchema(child);
        if (!child.isOptional()) required.push(key);
      }
      Object.assign(out, { type: "object", properties });
      if (required.length) out.required = required;
      if (def.unknownKeys === "strict") out.additionalProperties = false;
      return out;
    }
    case "ZodString": {
      out.type = "string";
      for (const check of def.checks ?? []) {
        if (check.kind === "min") out.minLength = check.value;
        if (check.kind === "max") out.maxLength = check.value;
        if (check.kind === "regex") out.pattern = check.regex.source;
      }
      return out;
    }
    case "ZodNumber": {
      out.type = (def.checks ?? []).some((c) => c.kind === "int") ? "integer" : "number";
      for (const check of def.checks ?? []) {
        if (check.kind === "min") out[check.inclusive ? "minimum" : "exclusiveMinimum"] = check.value;
        if (check.kind === "max") out[check.inclusive ? "maximum" : "exclusiveMaximum"] = check.value;
      }
      return out;
    }
    case "ZodBoolean":
      return { ...out, type: "boolean" };
    case "ZodNull":
      return { ...out, type: "null" };
    case "ZodLiteral":
      return { ...out, const: def.value };
    case "ZodEnum":
      return { ...out, type: "string", enum: [...def.values] };
    case "ZodNativeEnum":
      return { ...out, enum: Object.values(def.values) };
    case "ZodArray": {
      Object.assign(out, { type: "array", items: zodToJsonSchema(def.type) });
      if (def.minLength) out.minItems = def.minLength.value;
      if (def.maxLength) out.maxItems = def.maxLength.value;
      return out;
    }
    case "ZodOptional":
    case "ZodReadonly":
    case "ZodBranded":
    case "ZodCatch":
      return { ...zodToJsonSchema(def.innerType ?? def.type), ...out };
    case "ZodDefault":
      return { ...zodToJsonSchema(def.innerType), default: def.defaultValue(), ...out };
    case "ZodNullable":
      return { ...out, anyOf: [zodToJsonSchema(def.innerType), { type: "null" }] };
    case "ZodUnion":
    case "ZodDiscriminatedUnion":
      return { ...out, anyOf: [...(def.options?.values?.() ?? def.options)].map(zodToJsonSchema) };
    case "ZodRecord":
      return { ...out, type: "object", additionalProperties: zodToJsonSchema(def.valueType) };
    case "ZodEffects":
      return { ...zodToJsonSchema(def.schema), ...out };
    case "ZodPipeline":
      return { ...zodToJsonSchema(def.in), ...out };
    case "ZodTuple":
      return { ...out, type: "array", prefixItems: def.items.map(zodToJsonSchema) };
    default:
      return out;
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

export { zodToJsonSchema };

// --- IDs ---

const SLUG_LIMIT = 32;

export function wordSlug(label) {
  return (String(label ?? "").toLowerCase().match(/[a-z0-9]+/g) ?? [])
    .join("-")
    .slice(0, SLUG_LIMIT)
    .replace(/-+$/, "");
}

function hexPart(random) {
  if (random && typeof random.int === "function") {
    let text = "";
    for (let i = 0; i < 8; i++) text += random.int(0, 15).toString(16);
    return text;
  }
  return randomUUID().replaceAll("-", "").slice(0, 8);
}

/** prefix + the label's words + 8 hex; reproducible when context.random is passed fourth. */
export function shortId(prefix, label, _sessionId, random) {
  return [prefix, wordSlug(label), hexPart(random)].filter(Boolean).join("-");
}

export function shortIdBatch(prefix, labels, sessionId, random) {
  return (labels ?? []).map((label) => shortId(prefix, label, sessionId, random));
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

/** Look a text up in the translations for the game's language; {name} placeholders filled in. */
export function translate(text, messagesOrContext, params) {
  const source = String(text ?? "");
  const messages = messagesOrContext?.messages ?? messagesOrContext;
  const table = messages?.translations ?? messages ?? {};
  const found = typeof table[source] === "string" ? table[source] : source;
  if (!params) return found;
  return found.replace(/\{(\w+)\}/g, (whole, name) => (name in params ? String(params[name]) : whole));
}
