// Loading a package: importing its entry (and each runtime's handler and guard) from the folder
// Python names, running the entry factory with the covel object (registerTool, registerRpc, …),
// and checking what it registered against contributes in both directions. The loaded packages
// live in `packages`, which the methods read.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod";
import * as sdk from "./sdk.mjs";
import { messageCatalogs } from "./messages.mjs";
import { addPackageRoot, importChain, isInside, importFailure } from "./resolver.mjs";
import { POINTS as EXTENSION_POINTS, UNSUPPORTED as UNSUPPORTED_POINTS } from "./extension_points.mjs";
import { HostError, withTimeout } from "./errors.mjs";
import { current, toPython } from "./framing.mjs";

const HOOK_EVENTS = new Set([
  "SessionStart", "TurnStart", "PreCompaction", "PostCompaction", "PreSchedule", "PreRuntime",
  "PostContextAssembly", "PreStep", "PreLLMCall", "PostLLMResponse", "PostRuntime", "PreToolUse",
  "PostToolUse", "PreStateCommit", "PostStateCommit", "TurnStop", "SessionEnd",
]);
const ENFORCE = new Set(["pre", "normal", "post"]);

export const packages = new Map(); // package id -> loaded package
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

export async function loadPackage(params, call) {
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
  // Each runtime loads on its own: with partialRuntimes (a session's calls), one that cannot load
  // is recorded and refused when called, and the package's other runtimes keep running.
  pkg.failedRuntimes = new Map();
  for (const runtime of params.runtimes ?? []) {
    try {
      pkg.runtimes.set(runtime.id, await loadRuntime(pkg, runtime, root, tag, call));
    } catch (error) {
      const failure = runtimeFailure(error, runtime, root);
      if (!params.partialRuntimes) throw failure;
      pkg.failedRuntimes.set(runtime.id, failure);
    }
  }
  packages.set(pkg.id, pkg);
  return {
    package: pkg.id,
    tools: registration.tools.map((t) => ({ name: t.name, description: t.description ?? "", jsonSchema: t.jsonSchema ?? {}, annotations: t.annotations ?? {}, timeoutMs: t.timeoutMs ?? null })),
    actions: registration.actions.map((a) => a.name),
    forms: registration.forms.map((f) => f.name),
    extracted: extracted(registration),
    runtimes: [...pkg.runtimes.values()].filter((r) => r.handler).map((r) => r.id),
    failedRuntimes: [...pkg.failedRuntimes].map(([runtime, e]) => ({ runtime, code: e.code, message: e.message, details: e.details ?? null })),
    guards: [...pkg.runtimes.values()].filter((r) => r.guard).map((r) => r.id),
  };
}

async function loadRuntime(pkg, runtime, root, tag, call) {
  const loaded = { ...runtime, handler: null, guard: null };
  for (const part of ["handler", "guard"]) {
    if (!runtime[part]) continue;
    const module = await current.run({ package: pkg.id, runtime: runtime.id, call }, () => importInside(root, path.resolve(root, runtime[part]), tag, `${part} of runtime ${runtime.id}`));
    if (typeof module.default !== "function") {
      throw new HostError(`${part}_invalid`, `${part} ${runtime[part]} of runtime ${runtime.id} must default-export a function`);
    }
    loaded[part] = module.default;
  }
  return loaded;
}

/** A runtime's load failure, its code kept, naming the runtime and the chain of imports to it. */
function runtimeFailure(error, runtime, root) {
  const code = typeof error?.code === "string" ? error.code : "module_failed";
  const failed = error?.file ?? error?.details?.file ?? null;
  const chain = failed ? importChain(root, failed) : [];
  const through = chain.length > 1 ? ` (import chain: ${chain.join(" → ")})` : "";
  const details = { runtime: runtime.id, chain, ...(error?.details && typeof error.details === "object" && !Array.isArray(error.details) ? error.details : {}) };
  return new HostError(code, `runtime ${runtime.id} cannot load: ${error?.message ?? String(error)}${through}`, details);
}

export function packageOf(id) {
  const pkg = packages.get(id);
  if (!pkg) throw new HostError("package_not_loaded", `package ${id} is not loaded in this host`);
  return pkg;
}
