// Covel Hub's JavaScript plugin host: a long-lived Node process driven by Python over a framed
// JSON channel on two dedicated pipes (never stdout/stderr). Frames are a 4-byte big-endian
// length followed by UTF-8 JSON. Python runs one host for the bundled packages of a worker and
// one per community package version (pluginhost/pool.py); COVEL_HOST_TRUST says which this is.
//
// Python -> host:  {type:"call", id, method, params}        host -> Python: {type:"result"|"error", id, ...}
// host -> Python:  {type:"call", id, callId, method, params} (a ctx callback belonging to call callId)
// host -> Python:  {type:"log", level, package, runtime, message}
//
// Why this file is one piece of ~1000 lines: the call table (methods), the ctx objects each call
// builds (store, pluginData, tools, recursiveCall) and the package registry they read share one
// per-call state object and one AsyncLocalStorage, and every ctx callback goes through the same
// framing; split apart they would pass that state through every signature. The pieces with a
// seam of their own live beside it: contain.mjs (what plugin code may reach of the process),
// resolver.mjs (imports), sdk.mjs (the toolkit), random.mjs and ops.mjs (pluginData.update).
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { AsyncLocalStorage } from "node:async_hooks";
import { pathToFileURL } from "node:url";
import { format } from "node:util";
import { randomUUID } from "node:crypto";
import { z } from "zod";
import * as sdk from "./sdk.mjs";
import { createRandom } from "./random.mjs";
import { messageCatalogs, pluginMessagesFor } from "./messages.mjs";
import { applyOperations, OperationError } from "./ops.mjs";
import { addPackageRoot, ALLOWED_BUILTINS, installResolver, isInside, importFailure } from "./resolver.mjs";
import { freezeRealm } from "./freeze.mjs";
import { exitHost, lockDown, NETWORK_GLOBALS } from "./contain.mjs";
import { POINTS as EXTENSION_POINTS, UNSUPPORTED as UNSUPPORTED_POINTS } from "./extension_points.mjs";
import { stripTypeScriptTypes } from "node:module";

const MAX_VALUE_BYTES = 262144; // one plugin.data value, from the spec
const HOOK_EVENTS = new Set([
  "SessionStart", "TurnStart", "PreCompaction", "PostCompaction", "PreSchedule", "PreRuntime",
  "PostContextAssembly", "PreStep", "PreLLMCall", "PostLLMResponse", "PostRuntime", "PreToolUse",
  "PostToolUse", "PreStateCommit", "PostStateCommit", "TurnStop", "SessionEnd",
]);
const ENFORCE = new Set(["pre", "normal", "post"]);

class HostError extends Error {
  constructor(code, message, details) {
    super(message);
    this.code = code;
    if (details !== undefined) this.details = details;
  }
}

// Every host, bundled or community, drops network globals and the process's outside reach before
// any plugin module loads (contain.mjs); the host's own settings never reach process.env.
const SETTINGS = lockDown({
  refuse: (code, message) => new HostError(code, message),
  write: (stream, text) => writeOutput(stream, text),
});
installResolver();
const IN_FD = Number(SETTINGS.COVEL_HOST_IN_FD ?? 3);
const OUT_FD = Number(SETTINGS.COVEL_HOST_OUT_FD ?? 4);
const TRUST = SETTINGS.COVEL_HOST_TRUST === "community" ? "community" : "bundled";
// The largest frame the host sends (a result, a callback's parameters); Python refuses bigger.
const MAX_FRAME_BYTES = Number(SETTINGS.COVEL_HOST_MAX_FRAME_BYTES ?? 8 * 1024 * 1024);
const MAX_LOG_CHARS = 8192; // one log line; longer ones are cut
const LOG_RATE = Number(SETTINGS.COVEL_HOST_LOG_LINES_PER_S ?? 200); // per package, burst 2x

// ---------------------------------------------------------------- framing

// The host's own references: a plugin that patches JSON or Buffer changes its own values, not
// how the host frames them.
const stringify = JSON.stringify;
const parseJson = JSON.parse;
const bufferFrom = Buffer.from;

function writeFrame(body) {
  const frame = Buffer.allocUnsafe(4 + body.length);
  frame.writeUInt32BE(body.length, 0);
  body.copy(frame, 4);
  let offset = 0;
  while (offset < frame.length) {
    try {
      offset += fs.writeSync(OUT_FD, frame, offset);
    } catch (error) {
      if (error.code !== "EAGAIN") throw error;
    }
  }
}

// Deeper JSON than this is refused before it leaves the host: Python's json module recurses per
// level and gives up near 1,000 (a RecursionError), while V8 writes far deeper values happily.
const MAX_DEPTH = Number(SETTINGS.COVEL_HOST_MAX_DEPTH ?? 200);

/** How deeply the JSON text nests its objects and arrays (strings skipped), up to the limit + 1. */
function nesting(body) {
  if (body.length <= MAX_DEPTH * 2) return 0; // each level needs two bytes
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < body.length; i += 1) {
    const byte = body[i];
    if (inString) {
      if (byte === 0x5c) i += 1; // backslash: skip the escaped byte
      else if (byte === 0x22) inString = false;
    } else if (byte === 0x22) inString = true;
    else if (byte === 0x7b || byte === 0x5b) {
      depth += 1;
      if (depth > deepest && (deepest = depth) > MAX_DEPTH) return deepest;
    } else if (byte === 0x7d || byte === 0x5d) depth -= 1;
  }
  return deepest;
}

/**
 * Frame one message. A result over MAX_FRAME_BYTES (or one that is not JSON) is answered with an
 * error instead, so it is never stored; a callback over it throws (its promise rejects).
 */
function send(message) {
  let body;
  try {
    body = bufferFrom(stringify(message), "utf8");
  } catch (error) {
    if (message.type !== "result") throw error;
    body = bufferFrom(stringify(errorFrame(message.id, new HostError("result_not_json", `the result is not JSON data: ${error.message}`))), "utf8");
  }
  if (nesting(body) > MAX_DEPTH) {
    if (message.type === "call") {
      throw new HostError("callback_too_deep", `${message.method} nests its data more than ${MAX_DEPTH} levels deep`);
    }
    const what = message.type === "result" ? "the result" : "the error";
    body = bufferFrom(stringify(errorFrame(message.id, new HostError("result_too_deep", `${what} nests more than ${MAX_DEPTH} levels of objects and arrays; at most ${MAX_DEPTH} may leave the host`))), "utf8");
  }
  if (body.length > MAX_FRAME_BYTES) {
    if (message.type === "call") {
      throw new HostError("callback_too_large", `${message.method} carries ${body.length} bytes; a host callback may carry at most ${MAX_FRAME_BYTES}`);
    }
    const what = message.type === "result" ? "the result" : "the error";
    const refused = new HostError(message.type === "result" ? "result_too_large" : "error_too_large", `${what} is ${body.length} bytes of JSON; at most ${MAX_FRAME_BYTES} may leave the host`);
    body = bufferFrom(stringify(errorFrame(message.id, refused)), "utf8");
  }
  writeFrame(body);
}

const current = new AsyncLocalStorage(); // {package, runtime} of the code running now

// Log lines per package: a token bucket of LOG_RATE lines a second (bursts of twice that). What
// goes over is counted and reported once the package may log again.
const logBuckets = new Map(); // package (or "") -> {tokens, at, dropped}

function admitLog(pkg) {
  const now = performance.now();
  let bucket = logBuckets.get(pkg);
  if (!bucket) {
    bucket = { tokens: LOG_RATE * 2, at: now, dropped: 0 };
    logBuckets.set(pkg, bucket);
  }
  bucket.tokens = Math.min(LOG_RATE * 2, bucket.tokens + ((now - bucket.at) / 1000) * LOG_RATE);
  bucket.at = now;
  if (bucket.tokens < 1) {
    bucket.dropped += 1;
    return null;
  }
  bucket.tokens -= 1;
  const dropped = bucket.dropped;
  bucket.dropped = 0;
  return dropped;
}

function log(level, message, where = current.getStore()) {
  const pkg = where?.package ?? null;
  const dropped = admitLog(pkg ?? "");
  if (dropped === null) return;
  let text = String(message);
  if (text.length > MAX_LOG_CHARS) text = `${text.slice(0, MAX_LOG_CHARS)}… (${text.length - MAX_LOG_CHARS} more characters cut)`;
  if (dropped) {
    writeFrame(bufferFrom(stringify({ type: "log", level: "warning", package: pkg, runtime: null, message: `${dropped} log lines dropped (over ${LOG_RATE} lines/s)` }), "utf8"));
  }
  writeFrame(bufferFrom(stringify({ type: "log", level, package: pkg, runtime: where?.runtime ?? null, message: text }), "utf8"));
}

// Plugin writes to process.stdout / stderr arrive here (contain.mjs): one log line per line.
function writeOutput(stream, text) {
  const level = stream === "stderr" ? "error" : "info";
  for (const line of String(text).split("\n")) if (line) log(level, line);
}

// Plugin console output becomes log frames, attributed to the package whose code is running.
for (const [name, level] of [["log", "info"], ["info", "info"], ["debug", "debug"], ["warn", "warning"], ["error", "error"], ["trace", "debug"], ["dir", "info"], ["dirxml", "info"], ["table", "info"], ["assert", "error"]]) {
  console[name] = name === "assert"
    ? (condition, ...args) => { if (!condition) log(level, `Assertion failed${args.length ? `: ${format(...args)}` : ""}`); }
    : (...args) => log(level, format(...args));
}

// ---------------------------------------------------------------- calls to Python (ctx callbacks)

let nextCallbackId = 1;
const waiting = new Map(); // callback id -> {resolve, reject}

function toPython(call, method, params) {
  if (call.closed) {
    return Promise.reject(new HostError("call_closed", `${method} is refused: this call has ended or was aborted`));
  }
  const id = nextCallbackId++;
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    try {
      send({ type: "call", id, callId: call.id, method, params: { package: call.package, runtime: call.runtime ?? null, ...params } });
    } catch (error) {
      waiting.delete(id);
      reject(error);
    }
  });
}

function settleCallback(message) {
  const entry = waiting.get(message.id);
  if (!entry) return;
  waiting.delete(message.id);
  if (message.type === "result") entry.resolve(message.result);
  else {
    const hint = message.error?.hint;
    entry.reject(new HostError(message.error?.code ?? "callback_failed", message.error?.message ?? "callback failed", hint ? { hint } : undefined));
  }
}

// ---------------------------------------------------------------- packages

const packages = new Map(); // package id -> loaded package
let loadCounter = 0;

function makeHttp(call, registration) {
  const request = async (input, init = {}) => {
    if (registration.extract) {
      registration.hostCapabilityUsed = "covel.http";
      throw new HostError("host_capability_refused", "covel.http is not available while plugin_extract runs the entry factory");
    }
    const body = init.body === undefined || init.body === null ? null : Buffer.from(typeof init.body === "string" ? init.body : JSON.stringify(init.body)).toString("base64");
    // A tool or handler calling covel.http runs inside its own call; the factory inside the load.
    const response = await toPython(current.getStore()?.call ?? call(), "http", {
      method: String(init.method ?? "GET").toUpperCase(),
      url: String(input),
      headers: Object.fromEntries(Object.entries(init.headers ?? {}).map(([k, v]) => [k, String(v)])),
      body,
      timeout: (init.timeoutMs ?? 30000) / 1000,
    });
    const bytes = Buffer.from(response.body ?? "", "base64");
    return {
      status: response.status,
      ok: response.status >= 200 && response.status < 300,
      headers: response.headers ?? {},
      text: async () => bytes.toString("utf8"),
      json: async () => JSON.parse(bytes.toString("utf8")),
      arrayBuffer: async () => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length),
    };
  };
  return {
    fetch: request,
    fetchWithRetry: request,
    validateBaseUrl(url) {
      try {
        const parsed = new URL(String(url));
        return parsed.protocol === "https:" ? { ok: true } : { ok: false, reason: "only https origins are allowed" };
      } catch {
        return { ok: false, reason: "not a URL" };
      }
    },
  };
}

function makeCovel(pkg, registration, loadCall) {
  const open = () => {
    if (registration.closed) {
      throw new HostError("registration_closed", "registrations are valid only while the entry factory is running");
    }
  };
  const push = (list, item) => {
    open();
    list.push(item);
  };
  const hook = (event, handler, options = {}) => {
    if (typeof handler !== "function") throw new TypeError(`hook ${event} needs a handler function`);
    push(registration.hooks, { event: String(event), enforce: options.enforce ?? "normal", handler, options });
  };
  const extension = (pointOrSpec, idOrProvider, maybeProvider) => {
    const spec = typeof pointOrSpec === "object" && pointOrSpec !== null
      ? pointOrSpec
      : { point: pointOrSpec, id: idOrProvider, provider: maybeProvider };
    push(registration.extensions, { point: String(spec.point), id: String(spec.id), provider: spec.provider ?? spec });
  };
  return {
    pluginId: pkg.id,
    signal: registration.controller.signal,
    toolkit: {
      tool: sdk.tool,
      z,
      withPendingProposals: sdk.withPendingProposals,
      withModelView: sdk.withModelView,
      withEmittedEvents: sdk.withEmittedEvents,
      ToolError: sdk.ToolError,
      shortId: sdk.shortId,
      shortIdBatch: sdk.shortIdBatch,
      makeProposal: sdk.makeProposal,
    },
    http: makeHttp(loadCall, registration),
    registerTool(module) {
      if (!module || typeof module.name !== "string" || typeof module.execute !== "function") {
        open();
        throw new TypeError("registerTool needs a tool made with toolkit.tool()");
      }
      const timeoutProblem = sdk.toolTimeoutProblem(module.name, module.timeoutMs);
      if (timeoutProblem) {
        open();
        throw new RangeError(timeoutProblem);
      }
      push(registration.tools, module);
    },
    registerRpc(action, handler, options = {}) {
      if (typeof handler !== "function") throw new TypeError(`action ${action} needs a handler function`);
      push(registration.actions, { name: String(action), handler, options });
    },
    registerService(definition) {
      if (!definition || typeof definition.contract !== "string") throw new TypeError("registerService needs a contract");
      push(registration.services, {
        ...definition,
        access: definition.access ?? "read",
        modelFacing: definition.modelFacing === true,
      });
    },
    registerHook: hook,
    on: hook,
    provideExtension: extension,
    registerWire(id, wire) {
      push(registration.wires, { id: String(typeof id === "object" ? id.id : id), wire: wire ?? id });
    },
    registerWires(module) {
      for (const kind of ["image", "speech", "transcription"]) {
        for (const wire of module?.[kind] ?? []) push(registration.wires, { id: String(wire.id), wire });
      }
    },
    registerFormValidator(name, validator) {
      if (typeof validator !== "function") throw new TypeError(`form validator ${name} needs a function`);
      push(registration.forms, { name: String(name), validator });
    },
    onDispose(cleanup) {
      if (typeof cleanup === "function") registration.dispose.push(cleanup);
    },
  };
}

function dedup(items) {
  const seen = new Set();
  const out = [];
  for (const item of items) {
    const key = JSON.stringify(item);
    if (!seen.has(key)) {
      seen.add(key);
      out.push(item);
    }
  }
  return out;
}

/** The six lists plus extensions, as plugin_extract writes them (first-registration order). */
function extracted(registration) {
  return {
    tools: dedup(registration.tools.map((t) => t.name)),
    actions: dedup(registration.actions.map((a) => a.name)),
    services: dedup(registration.services.map((s) => {
      if (!s.modelFacing && s.access !== "write") return s.contract;
      const item = { contract: s.contract };
      if (s.access === "write") item.access = "write";
      if (s.modelFacing) item.modelFacing = true;
      return item;
    })),
    forms: dedup(registration.forms.map((f) => f.name)),
    wires: dedup(registration.wires.map((w) => w.id)),
    hooks: dedup(registration.hooks.map((h) => (h.enforce === "normal" ? h.event : { event: h.event, enforce: h.enforce }))),
    extensions: dedup(registration.extensions.map((e) => `${e.point}/${e.id}`)),
  };
}

function normaliseDeclared(declared) {
  const services = new Map();
  for (const item of declared.services ?? []) {
    const spec = typeof item === "string" ? { contract: item } : item;
    services.set(spec.contract, { access: spec.access ?? "read", modelFacing: spec.modelFacing === true });
  }
  const hooks = new Set((declared.hooks ?? []).map((h) => (typeof h === "string" ? `${h}:normal` : `${h.event}:${h.enforce ?? "normal"}`)));
  const extensions = new Set((declared.extensions ?? []).map((e) => (typeof e === "string" ? e : `${e.point}/${e.id}`)));
  return {
    tools: new Set(declared.tools ?? []),
    actions: new Set(declared.actions ?? []),
    forms: new Set(declared.forms ?? []),
    wires: new Set(declared.wires ?? []),
    services,
    hooks,
    extensions,
  };
}

/** Both directions: every registration declared, every declaration registered. */
function checkRegistrations(registration, declared) {
  const want = normaliseDeclared(declared);
  const problems = [];
  const compare = (kind, registeredNames, declaredSet, label) => {
    const got = new Set(registeredNames);
    for (const name of got) if (!declaredSet.has(name)) problems.push({ kind, name, problem: "undeclared", message: `${label} "${name}" is registered but not declared in contributes.${kind}` });
    for (const name of declaredSet) if (!got.has(name)) problems.push({ kind, name, problem: "missing", message: `${label} "${name}" is declared in contributes.${kind} but not registered` });
  };
  compare("tools", registration.tools.map((t) => t.name), want.tools, "tool");
  compare("actions", registration.actions.map((a) => a.name), want.actions, "action");
  compare("forms", registration.forms.map((f) => f.name), want.forms, "form validator");
  compare("wires", registration.wires.map((w) => w.id), want.wires, "wire");
  compare("extensions", registration.extensions.map((e) => `${e.point}/${e.id}`), want.extensions, "extension");
  compare("hooks", registration.hooks.map((h) => `${h.event}:${h.enforce}`), want.hooks, "hook");
  compare("services", registration.services.map((s) => s.contract), new Set(want.services.keys()), "service");
  for (const service of registration.services) {
    const spec = want.services.get(service.contract);
    if (!spec) continue;
    if (spec.access !== service.access) {
      problems.push({ kind: "services", name: service.contract, problem: "mismatch", message: `service "${service.contract}" is registered with access ${service.access} but declared with access ${spec.access}` });
    }
    if (spec.modelFacing !== service.modelFacing) {
      problems.push({ kind: "services", name: service.contract, problem: "mismatch", message: `service "${service.contract}" is registered with modelFacing ${service.modelFacing} but declared with modelFacing ${spec.modelFacing}` });
    }
    if (service.modelFacing && (!service.description || typeof service.input?.safeParse !== "function")) {
      problems.push({ kind: "services", name: service.contract, problem: "invalid", message: `model-facing service "${service.contract}" needs a description and a zod input` });
    }
  }
  for (const h of registration.hooks) {
    if (!HOOK_EVENTS.has(h.event)) problems.push({ kind: "hooks", name: h.event, problem: "invalid", message: `hook event "${h.event}" is not a lifecycle event` });
    if (!ENFORCE.has(h.enforce)) problems.push({ kind: "hooks", name: h.event, problem: "invalid", message: `hook "${h.event}" has enforce "${h.enforce}"; use pre, normal or post` });
  }
  const names = registration.tools.map((t) => t.name);
  for (const name of new Set(names.filter((n, i) => names.indexOf(n) !== i))) {
    problems.push({ kind: "tools", name, problem: "duplicate", message: `tool "${name}" is registered more than once` });
  }
  return problems;
}

function withTimeout(promise, ms, onTimeout) {
  if (!ms || ms <= 0) return promise;
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => {
      onTimeout?.();
      reject(new HostError("plugin_timeout", `did not finish within ${ms} ms`));
    }, ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

/** Every provided extension names a point this hub calls and has a handler (Covel's rules). */
function checkExtensionPoints(pkg, registration) {
  for (const e of registration.extensions) {
    if (UNSUPPORTED_POINTS[e.point]) {
      throw new HostError("extension_point_unsupported", `${pkg.id}: extension ${e.point}/${e.id} provides a point this hub does not call: ${UNSUPPORTED_POINTS[e.point]}`);
    }
    if (!EXTENSION_POINTS[e.point]) {
      throw new HostError("extension_point_unknown", `${pkg.id}: extension ${e.point}/${e.id} names no kernel extension point; known points: ${Object.keys(EXTENSION_POINTS).join(", ")}`);
    }
    if (typeof (typeof e.provider === "function" ? e.provider : e.provider?.handler) !== "function") {
      throw new HostError("handler_invalid", `${pkg.id}: extension ${e.point}/${e.id} needs { handler(input, ctx) }`);
    }
  }
}

async function importInside(root, file, tag, what) {
  const real = fs.existsSync(file) ? fs.realpathSync(file) : file;
  if (!isInside(root, real)) {
    throw new HostError("entry_outside_package", `${what} ${file} is outside the package folder ${root}`);
  }
  if (!fs.existsSync(real)) throw new HostError("entry_not_found", `${what} ${path.relative(root, real)} does not exist`);
  const url = new URL(pathToFileURL(real).href);
  url.searchParams.set("covel-load", tag);
  try {
    return await import(url.href);
  } catch (error) {
    // resolver.mjs: a coded error naming the importing file and line, never a bare plugin_failed.
    throw importFailure(error, root, what, path.relative(root, real));
  }
}

async function loadPackage(params, call) {
  const root = addPackageRoot(params.root);
  const tag = String(++loadCounter);
  const pkg = { id: params.package, root, catalogs: messageCatalogs(params.messages), messageCache: new Map(), runtimes: new Map(), tools: new Map(), actions: new Map(), forms: new Map(), services: new Map(), hooks: [], extensions: new Map(), contributedTools: params.declared?.tools ?? [], singleRuntime: params.singleRuntime === true };
  const registration = { tools: [], actions: [], services: [], hooks: [], wires: [], forms: [], extensions: [], dispose: [], closed: false, extract: params.mode === "extract", controller: new AbortController() };
  if (params.entry) {
    const entryFile = path.resolve(root, params.entry);
    const module = await current.run({ package: pkg.id, call }, () => importInside(root, entryFile, tag, "entry"));
    const factory = module.default;
    if (typeof factory !== "function") {
      throw new HostError("entry_invalid", `entry ${params.entry} must default-export the registration function`);
    }
    const covel = makeCovel(pkg, registration, () => call);
    try {
      await current.run({ package: pkg.id, call }, () => withTimeout(Promise.resolve(factory(covel)), params.timeoutMs ?? 10000));
    } catch (error) {
      if (error instanceof HostError && error.code === "plugin_timeout") throw new HostError("entry_timeout", `entry factory ${error.message}`);
      throw new HostError("entry_failed", `entry factory ${path.relative(root, entryFile)} of ${pkg.id} threw: ${error?.message ?? String(error)}`);
    } finally {
      registration.closed = true;
    }
    if (registration.hostCapabilityUsed) {
      throw new HostError("host_capability_refused", `the entry factory called ${registration.hostCapabilityUsed}, which is not available during plugin_extract`);
    }
  }
  if (params.mode === "extract") return { extracted: extracted(registration) };

  checkExtensionPoints(pkg, registration);
  const problems = checkRegistrations(registration, params.declared ?? {});
  if (problems.length) {
    throw new HostError("plugin_registration_invalid", `${pkg.id}: ${problems.map((p) => p.message).join("; ")}`, problems);
  }
  for (const t of registration.tools) pkg.tools.set(t.name, t);
  for (const a of registration.actions) pkg.actions.set(a.name, a);
  for (const f of registration.forms) pkg.forms.set(f.name, f);
  for (const s of registration.services) pkg.services.set(s.contract, s);
  for (const e of registration.extensions) pkg.extensions.set(`${e.point}/${e.id}`, e);
  pkg.hooks = registration.hooks;
  for (const runtime of params.runtimes ?? []) {
    const loaded = { ...runtime, handler: null, guard: null };
    for (const part of ["handler", "guard"]) {
      if (!runtime[part]) continue;
      const module = await current.run({ package: pkg.id, runtime: runtime.id, call }, () => importInside(root, path.resolve(root, runtime[part]), tag, `${part} of runtime ${runtime.id}`));
      if (typeof module.default !== "function") {
        throw new HostError(`${part}_invalid`, `${part} ${runtime[part]} of runtime ${runtime.id} must default-export a function`);
      }
      loaded[part] = module.default;
    }
    pkg.runtimes.set(runtime.id, loaded);
  }
  packages.set(pkg.id, pkg);
  return {
    package: pkg.id,
    tools: registration.tools.map((t) => ({ name: t.name, description: t.description ?? "", jsonSchema: t.jsonSchema ?? {}, annotations: t.annotations ?? {}, timeoutMs: t.timeoutMs ?? null })),
    actions: registration.actions.map((a) => a.name),
    forms: registration.forms.map((f) => f.name),
    extracted: extracted(registration),
    runtimes: [...pkg.runtimes.values()].filter((r) => r.handler).map((r) => r.id),
    guards: [...pkg.runtimes.values()].filter((r) => r.guard).map((r) => r.id),
  };
}

function packageOf(id) {
  const pkg = packages.get(id);
  if (!pkg) throw new HostError("package_not_loaded", `package ${id} is not loaded in this host`);
  return pkg;
}

// ---------------------------------------------------------------- contexts

function makeStore(call) {
  return {
    async getPluginData(namespace, key) {
      const value = await toPython(call, "pluginData.get", { namespace: String(namespace), key: String(key) });
      return value === null || value === undefined ? null : { key: String(key), value };
    },
    async listPluginData(namespace) {
      return toPython(call, "pluginData.list", { namespace: String(namespace) });
    },
    async getSession() {
      return toPython(call, "store.getSession", {});
    },
    async readTurnMessages(options = {}) {
      const limit = Math.min(Math.max(Number(options.limit ?? 100) || 100, 1), 500);
      return toPython(call, "store.readTurnMessages", { after: options.after ?? null, limit });
    },
    async listTurnMessages(limit) {
      const page = await toPython(call, "store.readTurnMessages", { after: null, limit: Math.min(Number(limit ?? 500) || 500, 500) });
      return page.messages ?? [];
    },
  };
}

function checkSize(namespace, key, value) {
  const bytes = Buffer.byteLength(JSON.stringify(value ?? null), "utf8");
  if (bytes > MAX_VALUE_BYTES) {
    throw new HostError("plugin_data_too_large", `plugin data ${namespace}/${key} is ${bytes} bytes; one value is at most ${MAX_VALUE_BYTES}`);
  }
}

/** ctx.pluginData: reads see this call's earlier writes; writes are recorded, not saved. */
function makePluginData(call) {
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

function makeLogger(call) {
  const where = { package: call.package, runtime: call.runtime };
  const entry = (level) => async (message, meta) => log(level, meta ? `${message} ${JSON.stringify(meta)}` : String(message), where);
  return { debug: entry("debug"), info: entry("info"), warn: entry("warning"), error: entry("error") };
}

function normaliseToolResult(result) {
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
function messagesOf(pkg, c) {
  return c.messages ?? pluginMessagesFor(pkg.catalogs, c.locale, pkg.messageCache);
}

function toolContext(call, pkg, c, extra = {}) {
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
    store: makeStore(call),
    random: call.random,
    signal: call.controller.signal,
    ...extra,
  };
}

async function runTool(call, pkg, name, args, context, { limited = false } = {}) {
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
function asToolError(error) {
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
async function recursiveCall(call, context, request) {
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
function allowedTools(pkg, runtime) {
  const listed = runtime.tools?.plugin;
  if (Array.isArray(listed)) return new Set(listed);
  return pkg.singleRuntime ? new Set(pkg.contributedTools) : new Set();
}

// ---------------------------------------------------------------- methods

const calls = new Map(); // python call id -> call state

function newCall(message, params) {
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

const methods = {
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
    if (!runtime?.handler) throw new HostError("runtime_not_found", `package ${pkg.id} has no function runtime "${params.runtime}"`);
    const c = params.context ?? {};
    const allowed = allowedTools(pkg, runtime);
    const builtin = new Set(runtime.tools?.builtin ?? []);
    const ctx = {
      sessionId: c.sessionId ?? null,
      turnId: c.turnId ?? null,
      pluginId: pkg.id,
      runtimeId: runtime.id,
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
    if (!runtime?.guard) throw new HostError("guard_not_found", `runtime ${params.runtime} of ${pkg.id} has no guard`);
    const c = params.context ?? {};
    // Read-only: a guard decides whether its runtime runs and changes nothing.
    const ctx = {
      sessionId: c.sessionId ?? null,
      pluginId: pkg.id,
      runtimeId: runtime.id,
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

function errorFrame(id, error) {
  const code = error?.code && typeof error.code === "string" ? error.code : "plugin_failed";
  return { type: "error", id, error: { code, message: error?.message ?? String(error), details: error?.details ?? null } };
}

async function handleCall(message) {
  const params = message.params ?? {};
  const method = methods[message.method];
  if (!method) {
    send(errorFrame(message.id, new HostError("unknown_method", `unknown method ${message.method}`)));
    return;
  }
  const call = newCall(message, params);
  const where = { package: call.package, runtime: call.runtime, call };
  let finished = false;
  const finish = (frame) => {
    if (finished) return;
    finished = true;
    call.closed = true; // later ctx.store / pluginData calls are refused
    calls.delete(message.id);
    send(frame);
  };
  const timeoutMs = Number(params.timeoutMs ?? 0);
  let timer;
  if (timeoutMs > 0) {
    timer = setTimeout(() => {
      call.closed = true;
      call.controller.abort(new HostError("plugin_timeout", `${message.method} exceeded its ${timeoutMs} ms limit`));
      finish(errorFrame(message.id, new HostError("plugin_timeout", `${message.method} ${params.tool ?? params.action ?? params.runtime ?? params.package ?? ""} did not finish within ${timeoutMs} ms`.replace(/\s+/g, " "))));
    }, timeoutMs);
  }
  try {
    const result = await current.run(where, () => method(params, call));
    finish({ type: "result", id: message.id, result: result === undefined ? null : result });
  } catch (error) {
    finish(errorFrame(message.id, error));
  } finally {
    clearTimeout(timer);
  }
}

function dispatch(message) {
  if (message.type === "call") {
    handleCall(message);
  } else if (message.type === "result" || message.type === "error") {
    settleCallback(message);
  } else if (message.type === "ping") {
    // The heartbeat: answered straight from the event loop, so a host whose thread is blocked
    // (Atomics.wait from a timer) is seen as hung while idle.
    writeFrame(bufferFrom(stringify({ type: "pong", id: message.id }), "utf8"));
  } else if (message.type === "shutdown") {
    exitHost(0);
  }
}

let pending = Buffer.alloc(0);
// A net.Socket over the pipe is polled by the event loop itself (no thread-pool hop per read).
const input = new net.Socket({ fd: IN_FD, readable: true, writable: false });
input.on("data", (chunk) => {
  pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
  while (pending.length >= 4) {
    const size = pending.readUInt32BE(0);
    if (pending.length < 4 + size) break;
    const body = pending.subarray(4, 4 + size);
    pending = pending.subarray(4 + size);
    let message;
    try {
      message = parseJson(body.toString("utf8"));
    } catch (error) {
      log("error", `host: dropped an unreadable frame: ${error.message}`, {});
      continue;
    }
    dispatch(message);
  }
});
// Python closing the channel is the signal to go.
input.on("end", () => exitHost(0));
input.on("error", () => exitHost(0));

process.on("unhandledRejection", (reason) => log("error", `unhandled rejection: ${reason?.stack ?? reason}`));
process.on("uncaughtException", (error) => log("error", `uncaught exception: ${error?.stack ?? error}`));

// Node's TypeScript stripper is WebAssembly, which reserves gigabytes of address space the first
// time it runs: run it once now, before the supervisor caps the address space at what it sees
// (else the first .ts import of a package fails with "Cannot allocate Wasm memory").
try {
  stripTypeScriptTypes("let warm: number = 1;");
} catch {
  // a Node without type stripping: .ts sources fail at import, with their own error
}

// Whether this process may open a socket at all: a connection to a path that does not exist
// fails with ENOENT where sockets are allowed, and with EPERM where the OS refuses socket() (the
// seccomp filter of sockwall.py). The supervisor refuses a community host where it is allowed.
const SOCKETS = await new Promise((resolve) => {
  let probe;
  try {
    probe = net.connect({ path: path.join(os.tmpdir(), `covel-socket-probe-${process.pid}`) });
  } catch (error) {
    resolve(`refused: ${error.code ?? error.message}`);
    return;
  }
  probe.on("connect", () => {
    probe.destroy();
    resolve("allowed");
  });
  probe.on("error", (error) => resolve(error.code === "EPERM" || error.code === "EACCES" ? "refused" : "allowed"));
});
let INTERFACES = null; // unknown where sockets are refused (the lookup itself needs one)
try {
  INTERFACES = Object.keys(os.networkInterfaces());
} catch {
  // refused by the socket wall
}

// The realm wall (freeze.mjs): from here on no shared prototype or global can be patched.
const REALM = SETTINGS.COVEL_HOST_FREEZE === "0" ? { frozen: 0 } : freezeRealm({
  modules: [sdk, ...(await Promise.all([...ALLOWED_BUILTINS, "net", "stream", "async_hooks", "timers"].map((name) => import(`node:${name}`))))],
  instances: [input, process.stdout, process.stderr, process.stdin, current, new AbortController(), setTimeout(() => {}, 0), setImmediate(() => {})],
});

// What this host can reach, for the supervisor to check (a community host must have the
// permission model on and, where a network namespace was asked for, no network interface).
const can = (scope) => (process.permission ? process.permission.has(scope) : true);
send({
  type: "ready",
  pid: process.pid,
  node: process.version,
  trust: TRUST,
  permission: {
    enabled: Boolean(process.permission),
    fsWrite: can("fs.write"),
    childProcess: can("child"),
    worker: can("worker"),
    addons: can("addon"),
    wasi: can("wasi"),
    inspector: can("inspector"),
  },
  interfaces: INTERFACES,
  sockets: SOCKETS,
  networkGlobals: NETWORK_GLOBALS.filter((name) => name in globalThis),
  frozen: REALM.frozen,
});
