// The ctx objects of a call: staged plugin data (ctx.pluginData), the logger, a tool's context,
// running a tool (with its own time limit when nested), ctx.tools' errors and ctx.recursiveCall.
// ctx.store is built in ctx_store.mjs.
import * as sdk from "./sdk.mjs";
import { pluginMessagesFor } from "./messages.mjs";
import { applyOperations, OperationError } from "./ops.mjs";
import { HostError, withTimeout } from "./errors.mjs";
import { log, toPython } from "./framing.mjs";
import { makeStore } from "./ctx_store.mjs";

const MAX_VALUE_BYTES = 262144; // one plugin.data value, from the spec

export function checkSize(namespace, key, value) {
  const bytes = Buffer.byteLength(JSON.stringify(value ?? null), "utf8");
  if (bytes > MAX_VALUE_BYTES) {
    throw new HostError("plugin_data_too_large", `plugin data ${namespace}/${key} is ${bytes} bytes; one value is at most ${MAX_VALUE_BYTES}`);
  }
}

/** ctx.pluginData: reads see this call's earlier writes; writes are recorded, not saved. */
export function makePluginData(call) {
  const overlay = new Map(); // "ns\u0000key" -> value (null = deleted)
  call.localData = overlay; // emptied when ctx.recursiveCall hands the writes to Python
  const k = (ns, key) => `${ns}\u0000${key}`;
  const read = async (namespace, key) => {
    const id = k(namespace, key);
    if (overlay.has(id)) return structuredClone(overlay.get(id));
    const value = await toPython(call, "pluginData.get", { namespace, key });
    return value ?? null;
  };
  return {
    get: (namespace, key) => read(String(namespace), String(key)),
    async list(namespace) {
      const ns = String(namespace);
      const rows = await toPython(call, "pluginData.list", { namespace: ns });
      const out = new Map((rows ?? []).map((row) => [row.key, row.value]));
      for (const [id, value] of overlay) {
        const [rowNs, key] = id.split("\u0000");
        if (rowNs !== ns) continue;
        if (value === null) out.delete(key);
        else out.set(key, structuredClone(value));
      }
      return [...out].map(([key, value]) => ({ key, value }));
    },
    async set(namespace, key, value) {
      const ns = String(namespace);
      const id = String(key);
      checkSize(ns, id, value);
      const copy = value === undefined ? null : structuredClone(value);
      overlay.set(k(ns, id), copy);
      call.operations.push(copy === null ? { kind: "delete", namespace: ns, key: id } : { kind: "set", namespace: ns, key: id, value: copy });
    },
    async update(namespace, key, operations) {
      const ns = String(namespace);
      const id = String(key);
      const before = await read(ns, id);
      let after;
      try {
        after = applyOperations(before, operations);
      } catch (error) {
        if (error instanceof OperationError) throw new HostError(error.code, `update of ${ns}/${id} failed: ${error.message}`);
        throw error;
      }
      checkSize(ns, id, after);
      overlay.set(k(ns, id), after);
      call.operations.push({ kind: "update", namespace: ns, key: id, ops: structuredClone(operations) });
    },
    async delete(namespace, key) {
      const ns = String(namespace);
      const id = String(key);
      overlay.set(k(ns, id), null);
      call.operations.push({ kind: "delete", namespace: ns, key: id });
    },
  };
}

export function makeLogger(call) {
  const where = { package: call.package, runtime: call.runtime };
  const entry = (level) => async (message, meta) => log(level, meta ? `${message} ${JSON.stringify(meta)}` : String(message), where);
  return { debug: entry("debug"), info: entry("info"), warn: entry("warning"), error: entry("error") };
}

export function normaliseToolResult(result) {
  const content = sdk.getToolContent(result);
  return {
    content: content === undefined ? null : content,
    modelView: sdk.getModelView(result) ?? null,
    pendingProposals: [...sdk.getPendingProposals(result)],
    emittedEvents: result?.kind === "covel.tool-result" ? [...(result.emittedEvents ?? [])] : [],
  };
}

function toolFailure(error, toolName) {
  if (error?.name === "ToolValidationError" || error?.code === "invalid_tool_arguments") {
    return new HostError("invalid_tool_arguments", `${error.message}: ${(error.details ?? []).map((d) => `${d.path}: ${d.message}`).join("; ")}`, error.details ?? []);
  }
  if (error instanceof sdk.ToolError || error?.name === "ToolError") {
    return new HostError("tool_error", error.message, { code: error.code, hint: error.hint ?? null });
  }
  if (error instanceof HostError) return error;
  return new HostError("tool_failed", `tool "${toolName}" threw: ${error?.message ?? String(error)}`);
}

/** ctx.messages of a call: what Python sent, else the package's catalogues in the call's locale. */
export function messagesOf(pkg, c) {
  return c.messages ?? pluginMessagesFor(pkg.catalogs, c.locale, pkg.messageCache);
}

export function toolContext(call, pkg, c, extra = {}) {
  return {
    sessionId: c.sessionId ?? null,
    turnId: c.turnId ?? null,
    pluginId: pkg.id,
    runtimeId: c.runtimeId ?? call.runtime ?? pkg.id,
    locale: c.locale ?? null,
    messages: messagesOf(pkg, c),
    world: c.world ?? null,
    userSettings: c.userSettings ?? {},
    turnNumber: c.turnNumber,
    // Covel's PluginToolContext: the topics this run emitted, its staged proposals, its inputs.
    emittedEventTopics: c.emittedEventTopics ?? [],
    pendingProposals: c.pendingProposals ?? [],
    inputSlots: c.inputSlots ?? {},
    store: makeStore(call),
    random: call.random,
    signal: call.controller.signal,
    ...extra,
  };
}

export async function runTool(call, pkg, name, args, context, { limited = false } = {}) {
  const module = pkg.tools.get(name);
  if (!module) throw new HostError("tool_not_found", `package ${pkg.id} has no tool "${name}"`);
  const limit = module.timeoutMs ?? sdk.DEFAULT_TOOL_TIMEOUT_MS;
  // A nested call gets a signal of its own that aborts at its limit (and with its caller).
  const own = limited ? new AbortController() : null;
  const ctx = own ? { ...context, signal: AbortSignal.any([context.signal, own.signal]) } : context;
  try {
    const running = Promise.resolve(module.execute(args ?? {}, ctx));
    const result = own ? await withTimeout(running, limit, () => own.abort()) : await running;
    return normaliseToolResult(result);
  } catch (error) {
    if (own?.signal.aborted) {
      const which = module.timeoutMs ? "its timeoutMs" : "the default tool limit";
      throw new HostError("plugin_timeout", `tool "${name}" did not finish within ${limit} ms (${which})`);
    }
    throw toolFailure(error, name);
  }
}

/** ctx.tools.call's failure: always a ToolError, with the code and hint as separate fields. */
export function asToolError(error) {
  if (error instanceof sdk.ToolError) return error;
  const hint = error?.details?.hint ?? undefined;
  const code = error?.details?.code ?? error?.code ?? "tool_failed";
  const failure = new sdk.ToolError(code, error?.message ?? String(error), { hint });
  if (Array.isArray(error?.details)) failure.details = error.details;
  return failure;
}

/** What is wrong with ctx.recursiveCall's argument, naming the field; null when nothing is. */
function recursiveCallProblem(request) {
  const kind = (value) => (value === null ? "null" : Array.isArray(value) ? "an array" : typeof value);
  if (request === null || typeof request !== "object" || Array.isArray(request)) {
    return `the argument must be an object { playerMessage?, manualTrigger: { runtimeId, payload? } }, got ${kind(request)}`;
  }
  const trigger = request.manualTrigger;
  if (trigger === null || typeof trigger !== "object" || Array.isArray(trigger)) {
    return `manualTrigger must be an object { runtimeId, payload? }, got ${kind(trigger)}`;
  }
  if (typeof trigger.runtimeId !== "string" || !trigger.runtimeId) {
    return `manualTrigger.runtimeId must be a non-empty string, got ${typeof trigger.runtimeId === "string" ? "an empty string" : kind(trigger.runtimeId)}`;
  }
  if (request.playerMessage !== undefined && request.playerMessage !== null && typeof request.playerMessage !== "string") {
    return `playerMessage must be a string, got ${kind(request.playerMessage)}`;
  }
  try {
    JSON.stringify(trigger.payload ?? null);
  } catch (error) {
    return `manualTrigger.payload must be JSON data: ${error.message}`;
  }
  return null;
}

/**
 * ctx.recursiveCall: runs a runtime of the caller's own package nested, through Python (the turn
 * executor binds its inputs and attributes its writes to the caller). The caller's writes so far
 * leave its local overlay and go along, so Python stages them first and the nested run sees them;
 * afterwards the caller reads everything back through Python.
 */
export async function recursiveCall(call, context, request) {
  const problem = recursiveCallProblem(request);
  if (problem) throw new sdk.ToolError("recursive_call_invalid", `recursiveCall: ${problem}`);
  if (!context.nestedCalls) {
    throw new sdk.ToolError("recursive_call_unavailable", "recursiveCall runs only inside a session's turn (or a detached job's background turn); this run has none");
  }
  const operations = call.operations.splice(0);
  const proposals = call.proposals.splice(0);
  call.localData?.clear();
  try {
    return await toPython(call, "runtime.recursiveCall", {
      runtimeId: request.manualTrigger.runtimeId,
      playerMessage: typeof request.playerMessage === "string" ? request.playerMessage : null,
      payload: request.manualTrigger.payload ?? null,
      operations,
      proposals,
    });
  } catch (error) {
    throw asToolError(error);
  }
}

/** The tools a function runtime may call: function.tools.plugin, or every tool of a single-runtime package. */
export function allowedTools(pkg, runtime) {
  const listed = runtime.tools?.plugin;
  if (Array.isArray(listed)) return new Set(listed);
  return pkg.singleRuntime ? new Set(pkg.contributedTools) : new Set();
}
