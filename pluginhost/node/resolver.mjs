// Module resolution for plugin code. Inside a package folder, only these resolve: files of that
// same package (.js/.mjs, and TypeScript .ts/.mts that Node 24 strips), `@covel/plugin-handlers-utils`
// (the host's SDK), `zod` (the hub's pinned copy) and the Node built-ins that reach nothing outside
// the process (ALLOWED_BUILTINS). Everything else — fs, net, child_process, other bare names,
// paths escaping the package — is refused with an error that names the importing file and the
// specifier. Hooks run in-thread (module.registerHooks).
import { builtinModules, registerHooks } from "node:module";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const SDK_URL = new URL("./sdk.mjs", import.meta.url).href;
const HOST_URL = import.meta.url;
const PACKAGE_ROOTS = new Set(); // real paths of loaded package folders
// Taken before contain.mjs replaces process.execPath with a name that shows no server path.
const NODE = process.execPath;

export class ImportRefused extends Error {
  constructor(specifier, parentFile, reason) {
    super(`import "${specifier}" from ${parentFile} is refused: ${reason}`);
    this.name = "ImportRefused";
    this.code = "plugin_import_refused";
    this.specifier = specifier;
    this.file = parentFile;
  }
}

/** A relative import naming no file of the package (after the TypeScript mapping). */
export class ModuleNotFound extends Error {
  constructor(specifier, parentFile) {
    super(`import "${specifier}" from ${parentFile}: no such file in the package`);
    this.name = "ModuleNotFound";
    this.code = "module_not_found";
    this.specifier = specifier;
    this.file = parentFile;
  }
}

// Built-ins that compute inside the process and reach nothing outside it: no files, sockets,
// processes, threads, other contexts or the debugger. Everything else Node ships is refused.
export const ALLOWED_BUILTINS = Object.freeze([
  "assert",
  "assert/strict",
  "buffer",
  "crypto",
  "events",
  "path",
  "path/posix",
  "path/win32",
  "punycode",
  "querystring",
  "string_decoder",
  "url",
  "util",
  "util/types",
]);
const ALLOWED = new Set(ALLOWED_BUILTINS);
const BUILTINS = new Set(builtinModules);

function builtinName(specifier) {
  const bare = specifier.startsWith("node:") ? specifier.slice(5) : specifier;
  return specifier.startsWith("node:") || BUILTINS.has(bare) ? bare : null;
}

// TypeScript authors import "./strategy.js" where only strategy.ts exists; Node 24 strips the
// types of .ts/.mts itself. Try the written name first, then its TypeScript twins.
const TS_TWINS = { ".js": [".ts"], ".mjs": [".mts"], "": [".ts", ".mts", ".js", ".mjs"] };

export function isFile(file) {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

export function existingTarget(file) {
  if (isFile(file)) return file;
  const ext = path.extname(file);
  const twins = TS_TWINS[ext] ?? (ext ? null : TS_TWINS[""]);
  if (!twins) return null;
  const stem = ext === ".js" || ext === ".mjs" ? file.slice(0, -ext.length) : file;
  for (const twin of twins) if (isFile(stem + twin)) return stem + twin;
  return null;
}

// Which package file imported which (the last import seen): the chain a load failure names.
const IMPORTED_BY = new Map(); // real path -> the importing file's path

/** The package-relative files from the first importer down to `file` (relative to root). */
export function importChain(root, file) {
  const chain = [];
  const seen = new Set();
  for (let at = path.resolve(root, file); at && !seen.has(at) && isInside(root, at); at = IMPORTED_BY.get(at)) {
    seen.add(at);
    chain.unshift(path.relative(root, at));
  }
  return chain;
}

export function addPackageRoot(root) {
  const real = realpathSync(root);
  PACKAGE_ROOTS.add(real);
  return real;
}

export function isInside(root, file) {
  const rel = path.relative(root, file);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

function rootOf(url) {
  if (!url || !url.startsWith("file:")) return null;
  let file;
  try {
    file = fileURLToPath(url);
  } catch {
    return null;
  }
  for (const root of PACKAGE_ROOTS) if (isInside(root, file)) return root;
  return null;
}

function withLoadTag(url, parentURL) {
  // Carry the load generation (?covel-load=N) from the entry to every module of the package, so
  // a reload gets fresh module instances instead of the cached ones.
  const tag = new URL(parentURL).searchParams.get("covel-load");
  if (!tag) return url;
  const out = new URL(url);
  out.searchParams.set("covel-load", tag);
  return out.href;
}

function resolve(specifier, context, nextResolve) {
  const root = rootOf(context.parentURL);
  if (!root) return nextResolve(specifier, context);
  const parentFile = path.relative(root, fileURLToPath(context.parentURL)) || fileURLToPath(context.parentURL);

  if (specifier === "@covel/plugin-handlers-utils") return { url: SDK_URL, shortCircuit: true };
  if (specifier === "zod" || specifier.startsWith("zod/")) {
    return nextResolve(specifier, { ...context, parentURL: HOST_URL });
  }
  const builtin = builtinName(specifier);
  if (builtin !== null) {
    if (ALLOWED.has(builtin)) return { url: `node:${builtin}`, shortCircuit: true };
    throw new ImportRefused(
      specifier,
      parentFile,
      `the Node.js built-in "${builtin}" reaches outside the plugin host; plugins may import only ${ALLOWED_BUILTINS.join(", ")}`,
    );
  }
  const relative = specifier.startsWith("./") || specifier.startsWith("../");
  const absolute = specifier.startsWith("/") || specifier.startsWith("file:");
  if (!relative && !absolute) {
    throw new ImportRefused(
      specifier,
      parentFile,
      "only @covel/plugin-handlers-utils, zod, the pure Node.js built-ins and files inside the package can be imported; bundle other dependencies into the plugin",
    );
  }
  if (absolute) {
    throw new ImportRefused(specifier, parentFile, "absolute paths are not allowed; import package files by relative path");
  }
  const target = fileURLToPath(new URL(specifier, context.parentURL));
  const lexical = existingTarget(target);
  let real;
  try {
    real = realpathSync(lexical ?? target);
  } catch {
    real = lexical ?? target;
  }
  if (!isInside(root, real)) {
    throw new ImportRefused(specifier, parentFile, "it resolves outside the package folder");
  }
  if (!lexical || !existsSync(real)) throw new ModuleNotFound(specifier, parentFile);
  IMPORTED_BY.set(real, fileURLToPath(context.parentURL));
  return { url: withLoadTag(pathToFileURL(real).href, context.parentURL), format: formatOf(real), shortCircuit: true };
}

function formatOf(file) {
  return /\.m?ts$/.test(file) ? "module-typescript" : "module";
}

let lastLoaded = null; // the package module the load hook handed Node last (the one it compiles next)

function load(url, context, nextLoad) {
  if (rootOf(url)) lastLoaded = url;
  // Covel loads a package's .js files as ES modules (no package.json is needed or read) and its
  // .ts/.mts sources with Node's own type stripping.
  if (rootOf(url)) {
    if (/\.m?js(\?|$)/.test(url)) return nextLoad(url, { ...context, format: "module" });
    if (/\.m?ts(\?|$)/.test(url)) return nextLoad(url, { ...context, format: "module-typescript" });
  }
  return nextLoad(url, context);
}

/** The first package file:line in an error's stack (Node writes "file:///…:LINE"), or null. */
function stackLocation(error, root) {
  const stack = typeof error?.stack === "string" ? error.stack : "";
  for (const found of stack.matchAll(/(file:\/\/[^\s:)?]+)(?:\?[^\s:)]*)?:(\d+)/g)) {
    try {
      const file = fileURLToPath(found[1]);
      if (isInside(root, file)) return { file: path.relative(root, file), line: Number(found[2]) };
    } catch {
      // not a file URL after all
    }
  }
  return null;
}

/**
 * The coded error a failed import of `what` (the entry, a handler) becomes. The resolver's own
 * refusals pass through; a syntax error is `module_syntax_error` and a module that throws while
 * it is evaluated is `module_failed`, each naming the package file and line where Node gives one.
 */
export function importFailure(error, root, what, relFile) {
  if (error instanceof ImportRefused || error instanceof ModuleNotFound) return error;
  const message = String(error?.message ?? error).split("\n")[0];
  const failure = new Error();
  const syntax = error instanceof SyntaxError || error?.code === "ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX" || error?.code === "ERR_INVALID_TYPESCRIPT_SYNTAX";
  const where = syntax ? syntaxLocation(root) : stackLocation(error, root);
  const at = where ? `${where.file}${where.line ? `:${where.line}` : ""}` : relFile;
  if (syntax) {
    failure.code = "module_syntax_error";
    failure.message = `${what} ${relFile} cannot be parsed: ${at}: ${message}`;
  } else {
    failure.code = "module_failed";
    failure.message = `${what} ${relFile} threw while its modules were evaluated, at ${at}: ${message}`;
  }
  failure.details = { file: where?.file ?? relFile, line: where?.line ?? null };
  return failure;
}

// Node's SyntaxError of an ES module carries no location. The module it failed on is the one the
// load hook handed over last; a syntax check of that file's source (piped to a short-lived
// `node --check`, never run) gives the line. Where the host may not start a process, the file alone.
function syntaxLocation(root) {
  if (!lastLoaded) return null;
  let file;
  try {
    file = fileURLToPath(lastLoaded.split("?")[0]);
  } catch {
    return null;
  }
  if (!isInside(root, file)) return null;
  const rel = path.relative(root, file);
  try {
    const type = /\.m?ts$/.test(file) ? "module-typescript" : "module";
    const checked = spawnSync(NODE, [`--input-type=${type}`, "--check"], {
      input: readFileSync(file),
      encoding: "utf8",
      timeout: 5000,
      env: {},
    });
    const line = /\[stdin\]:(\d+)/.exec(checked.stderr ?? "");
    return { file: rel, line: line ? Number(line[1]) : null };
  } catch {
    return { file: rel, line: null };
  }
}

let installed = false;
export function installResolver() {
  if (installed) return;
  registerHooks({ resolve, load });
  installed = true;
}

export { SDK_URL };
