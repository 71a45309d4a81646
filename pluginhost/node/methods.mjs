// The call table: each method Python may call (load, tool, rpc, function, guard, validateForm,
// service, extension, hook) with the per-call state newCall() makes (abort signal, staged
// operations and proposals, the call's random stream).
import * as sdk from "./sdk.mjs";
import { createRandom } from "./random.mjs";
import { POINTS as EXTENSION_POINTS } from "./extension_points.mjs";
import { HostError, withTimeout } from "./errors.mjs";
import { toPython } from "./framing.mjs";
import { loadPackage, packageOf, packages } from "./registration.mjs";
import { makeStore } from "./ctx_store.mjs";
import { allowedTools, asToolError, checkSize, makeLogger, makePluginData, messagesOf, normaliseToolResult, recursiveCall, runTool, toolContext } from "./ctx.mjs";

// What a function handler and its guard both read of the turn that runs them.
function turnReadings(pkg, c) {
  return {
    playerMessage: c.playerMessage ?? "",
    playerActions: c.playerActions ?? [],
    manualPayload: c.manualPayload,
    // {topic, data, payload, source} of the event that woke an event-triggered runtime.
    triggerEvent: c.triggerEvent ?? undefined,
    inputs: c.inputs ?? {},
    world: c.world ?? null,
    userSettings: c.userSettings ?? {},
    locale: c.locale ?? null,
    messages: messagesOf(pkg, c),
    logicalTurn: c.logicalTurn,
  };
}

export const calls = new Map(); // python call id -> call state

export function newCall(message, params) {
  const call = {
    id: message.id,
    package: params.package ?? null,
    runtime: params.runtime ?? null,
    controller: new AbortController(),
    closed: false,
    operations: [],
    proposals: [],
    // random.mjs: Covel's int(min, max) with max excluded; seeded per call from Python's seed,
    // per session with COVEL_RANDOM_SEED, else node:crypto. The stream is who draws.
    random: createRandom({
      seed: params.context?.seed ?? params.seed,
      sessionId: params.context?.sessionId,
      pluginId: params.package,
      stream: params.runtime ?? params.action ?? params.tool ?? params.contract ?? params.package,
    }),
  };
  calls.set(message.id, call);
  return call;
}

export const methods = {
  async echo(params) {
    return params;
  },

  async load(params, call) {
    return loadPackage(params, call);
  },

  async unload(params) {
    const pkg = packages.get(params.package);
    packages.delete(params.package);
    return { unloaded: Boolean(pkg) };
  },

  async tool(params, call) {
    const pkg = packageOf(params.package);
    const c = params.context ?? {};
    return runTool(call, pkg, params.tool, params.args, toolContext(call, pkg, c));
  },

  async rpc(params, call) {
    const pkg = packageOf(params.package);
    const action = pkg.actions.get(params.action);
    if (!action) throw new HostError("action_not_found", `package ${pkg.id} has no action "${params.action}"`);
    const c = params.context ?? {};
    const store = {
      ...makeStore(call),
      // An action's writes take effect at once (no turn to commit with).
      async setPluginData(record) {
        checkSize(record.namespace, record.key, record.value);
        await toPython(call, "pluginData.set", { namespace: String(record.namespace), key: String(record.key), value: record.value ?? null });
      },
      async listPlayerInputs() {
        return [];
      },
    };
    const ctx = {
      sessionId: c.sessionId ?? null,
      pluginId: pkg.id,
      action: action.name,
      runtimeId: c.runtimeId,
      locale: c.locale ?? null,
      messages: messagesOf(pkg, c),
      userSettings: c.userSettings ?? {},
      command: c.command,
      environment: c.environment,
      store,
      signal: call.controller.signal,
      logger: makeLogger(call),
      random: call.random,
    };
    const value = await action.handler(params.payload ?? null, ctx);
    return { value: value === undefined ? null : value };
  },

  async function(params, call) {
    const pkg = packageOf(params.package);
    const runtime = pkg.runtimes.get(params.runtime);
    if (pkg.failedRuntimes?.has(params.runtime)) throw pkg.failedRuntimes.get(params.runtime);
    if (!runtime?.handler) throw new HostError("runtime_not_found", `package ${pkg.id} has no function runtime "${params.runtime}"`);
    const c = params.context ?? {};
    const allowed = allowedTools(pkg, runtime);
    const builtin = new Set(runtime.tools?.builtin ?? []);
    const ctx = {
      sessionId: c.sessionId ?? null,
      turnId: c.turnId ?? null,
      pluginId: pkg.id,
      runtimeId: runtime.id,
      ...turnReadings(pkg, c),
      recursionDepth: c.recursionDepth ?? 0,
      recursiveCall: (request) => recursiveCall(call, c, request),
      execution: { sourceTurnId: c.sourceTurnId ?? null },
      random: call.random,
      signal: call.controller.signal,
      logger: makeLogger(call),
      store: makeStore(call),
      pluginData: makePluginData(call),
      tools: {
        async call(name, args) {
          const toolName = String(name);
          if (allowed.has(toolName)) {
            let result;
            try {
              result = await runTool(call, pkg, toolName, args, toolContext(call, pkg, c, { runtimeId: runtime.id }), { limited: true });
            } catch (error) {
              throw asToolError(error);
            }
            call.proposals.push(...result.pendingProposals);
            return result.content;
          }
          if (builtin.has(toolName)) {
            try {
              return await toPython(call, "tools.call", { name: toolName, args: args ?? {} });
            } catch (error) {
              throw asToolError(error);
            }
          }
          throw new sdk.ToolError("tool_unavailable", `tool "${toolName}" is unavailable: it is not listed in function.tools of runtime ${runtime.id}`);
        },
      },
    };
    const result = await runtime.handler(ctx);
    const normal = normaliseToolResult(result);
    return {
      result: normal.content,
      operations: call.operations,
      proposals: [...call.proposals, ...normal.pendingProposals],
      emittedEvents: normal.emittedEvents,
    };
  },

  async guard(params, call) {
    const pkg = packageOf(params.package);
    const runtime = pkg.runtimes.get(params.runtime);
    if (pkg.failedRuntimes?.has(params.runtime)) throw pkg.failedRuntimes.get(params.runtime);
    if (!runtime?.guard) throw new HostError("guard_not_found", `runtime ${params.runtime} of ${pkg.id} has no guard`);
    const c = params.context ?? {};
    // Read-only: a guard decides whether its runtime runs and changes nothing.
    const ctx = {
      sessionId: c.sessionId ?? null,
      pluginId: pkg.id,
      runtimeId: runtime.id,
      ...turnReadings(pkg, c),
      store: makeStore(call),
      signal: call.controller.signal,
      logger: makeLogger(call),
    };
    const verdict = await runtime.guard(ctx);
    const skip = verdict?.skip === true;
    return { skip, reason: skip ? String(verdict.reason ?? "skipped by its guard") : null };
  },

  async validateForm(params) {
    const pkg = packageOf(params.package);
    const form = pkg.forms.get(params.name);
    if (!form) throw new HostError("form_not_found", `package ${pkg.id} has no form validator "${params.name}"`);
    const c = params.context ?? {};
    const outcome = form.validator(params.values ?? {}, params.data ?? null, { ...c, messages: messagesOf(pkg, c) });
    if (outcome && typeof outcome.then === "function") {
      throw new HostError("validator_not_synchronous", `form validator "${params.name}" returned a promise; validators must be synchronous`);
    }
    if (outcome === undefined || outcome === null) return { ok: true, formError: null, fieldErrors: [] };
    if (typeof outcome === "string") return { ok: false, formError: outcome, fieldErrors: [] };
    const list = Array.isArray(outcome) ? outcome : [outcome];
    return { ok: false, formError: null, fieldErrors: list.map((i) => ({ field: String(i.field ?? ""), message: String(i.message ?? "") })) };
  },

  async service(params, call) {
    const pkg = packageOf(params.package);
    const service = pkg.services.get(params.contract);
    if (!service) throw new HostError("service_not_found", `package ${pkg.id} has no service "${params.contract}"`);
    const check = (schema, value, code, what) => {
      if (!schema || typeof schema.safeParse !== "function") return value;
      const parsed = schema.safeParse(value);
      if (parsed.success) return parsed.data;
      const details = parsed.error.issues.map((i) => ({ path: i.path.length ? i.path.join(".") : "(root)", message: i.message }));
      throw new HostError(code, `${what} of service "${service.contract}" is invalid: ${details.map((d) => `${d.path}: ${d.message}`).join("; ")}`, details);
    };
    const input = check(service.input, params.input, "invalid_service_input", "input");
    const ctx = {
      callerPluginId: params.callerPluginId ?? null,
      pluginId: pkg.id,
      signal: call.controller.signal,
      services: null,
      store: makeStore(call),
      random: call.random,
      logger: makeLogger(call),
      // A write service stages its writes; they commit with the caller's work.
      ...(service.access === "write" ? { pluginData: makePluginData(call) } : {}),
    };
    const output = check(service.output, await service.handler(input, ctx), "invalid_service_output", "output");
    return { output: output === undefined ? null : output, operations: call.operations };
  },

  async extension(params, call) {
    return runExtension(params, call);
  },

  // One package's hooks for one event (and, when given, one enforce phase). Python orders the
  // packages and phases (sessions/hooks.py); here each handler gets its own time limit, and a
  // throw, a timeout or an answer that is no hook result is reported as that handler's result,
  // so one bad hook never hides what the others said. sequential: each handler sees the payload
  // the previous ones replaced, and the first abort ends the chain.
  async hook(params, call) {
    const pkg = packageOf(params.package);
    const sequential = params.sequential === true;
    const limitMs = Number(params.handlerTimeoutMs ?? 5000);
    const settings = Object.freeze({ ...(params.context?.userSettings ?? {}) });
    let payload = params.payload ?? null;
    const results = [];
    for (const h of pkg.hooks) {
      if (h.event !== params.event || (params.enforce && h.enforce !== params.enforce)) continue;
      if (typeof h.options?.match === "function" && !h.options.match(payload)) continue;
      const own = new AbortController();
      const ctx = { ...(params.context ?? {}), event: params.event, pluginId: pkg.id, signal: AbortSignal.any([call.controller.signal, own.signal]), getOwnSettings: () => settings };
      const limit = Number(h.options?.timeoutMs ?? limitMs);
      let result;
      try {
        result = await withTimeout(Promise.resolve().then(() => h.handler(ctx, payload)), limit, () => own.abort());
      } catch (error) {
        const timedOut = error instanceof HostError && error.code === "plugin_timeout";
        const reason = timedOut ? `hook ${pkg.id}:${params.event} timed out after ${limit}ms` : `hook ${pkg.id}:${params.event} threw: ${error?.message ?? String(error)}`;
        results.push({ action: "abort", reason, failure: timedOut ? "timeout" : "error" });
        if (sequential) break;
        continue;
      }
      const problem = hookResultProblem(result);
      if (problem) {
        results.push({ action: "continue", failure: "invalid", reason: `hook ${pkg.id}:${params.event} ${problem}` });
        continue;
      }
      const answer = result ?? { action: "continue" };
      results.push(answer);
      if (!sequential) continue;
      if (answer.action === "abort") break;
      if (answer.replace) payload = { ...(payload ?? {}), ...answer.replace };
    }
    return { results };
  },
};

/** What is wrong with a hook handler's answer, or null: {action: "continue", replace?} or {action: "abort", reason}. */
function hookResultProblem(result) {
  if (result === undefined || result === null) return null;
  const kind = Array.isArray(result) ? "an array" : typeof result;
  if (kind !== "object") return `returned ${kind}; a hook answers { action: "continue", replace? } or { action: "abort", reason }`;
  if (result.action === "abort") return typeof result.reason === "string" ? null : "aborted without a reason string";
  if (result.action !== "continue") return `returned action ${JSON.stringify(result.action)}; use "continue" or "abort"`;
  if (result.replace !== undefined && (result.replace === null || typeof result.replace !== "object" || Array.isArray(result.replace))) return "returned a replace that is not an object";
  return null;
}

// A row as an extension provider reads it (Covel: the whole record, value in .value).
const extensionRow = (pluginId, namespace, row) => ({ pluginId, namespace, key: row.key, value: row.value });
// Hidden world data never reaches an extension: its output goes to prompts and pages.
const hiddenNamespace = (namespace) => namespace.startsWith("_hidden");

/** ctx.pluginData of an extension provider: read-only, its own package's committed data. */
function extensionData(call, pluginId) {
  const list = async (namespace) => {
    const ns = String(namespace);
    if (hiddenNamespace(ns)) return [];
    const rows = await toPython(call, "pluginData.list", { namespace: ns });
    return (rows ?? []).map((row) => extensionRow(pluginId, ns, row));
  };
  return {
    list,
    async get(namespace, key) {
      const ns = String(namespace);
      if (hiddenNamespace(ns)) return undefined;
      const value = await toPython(call, "pluginData.get", { namespace: ns, key: String(key) });
      return value === null || value === undefined ? undefined : extensionRow(pluginId, ns, { key: String(key), value });
    },
  };
}

function pointCheck(schema, value, code, what) {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const details = parsed.error.issues.map((i) => ({ path: i.path.length ? i.path.join(".") : "(root)", message: i.message }));
  throw new HostError(code, `${what}: ${details.map((d) => `${d.path}: ${d.message}`).join("; ")}`, details);
}

/** Call one provider: its input and output go through the point's schema. */
async function runExtension(params, call) {
  const pkg = packageOf(params.package);
  const name = `${params.point}/${params.id}`;
  const provided = pkg.extensions.get(name);
  if (!provided) throw new HostError("extension_not_found", `package ${pkg.id} provides no extension ${name}`);
  const point = EXTENSION_POINTS[provided.point];
  const input = pointCheck(point.input, params.input, "extension_input_invalid", `input of ${name}`);
  const c = params.context ?? {};
  const ctx = {
    sessionId: c.sessionId ?? null,
    turnId: c.turnId ?? undefined,
    locale: c.locale ?? "en",
    world: c.world ?? null,
    pluginId: pkg.id,
    signal: call.controller.signal,
    logger: makeLogger(call),
    pluginData: extensionData(call, pkg.id),
  };
  const handler = typeof provided.provider === "function" ? provided.provider : provided.provider.handler.bind(provided.provider);
  const value = await handler(structuredClone(input), ctx);
  let output = pointCheck(point.output, value === undefined ? null : value, "extension_output_invalid", `output of ${pkg.id}'s ${name}`);
  if (point.attribute) {
    try {
      output = point.attribute(output, pkg.id, params.slot);
    } catch (error) {
      const issues = error?.issues?.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
      throw new HostError("extension_output_invalid", `output of ${pkg.id}'s ${name} does not fit slot ${params.slot}: ${issues ?? error.message}`);
    }
  }
  return { output };
}
