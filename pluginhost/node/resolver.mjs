// Module resolution for plugin code. Inside a package folder, only three things resolve: files of
// that same package, `@covel/plugin-handlers-utils` (the host's SDK) and `zod` (the hub's pinned
// copy). Everything else — node: builtins, other bare names, paths escaping the package — is
// refused with an error that names the specifier. Hooks run in-thread (module.registerHooks).
import { registerHooks } from "node:module";
import { realpathSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const SDK_URL = new URL("./sdk.mjs", import.meta.url).href;
const HOST_URL = import.meta.url;
const PACKAGE_ROOTS = new Set(); // real paths of loaded package folders

export class ImportRefused extends Error {
  constructor(specifier, parentFile, reason) {
    super(`import "${specifier}" from ${parentFile} is refused: ${reason}`);
    this.name = "ImportRefused";
    this.code = "plugin_import_refused";
    this.specifier = specifier;
  }
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
  if (specifier.startsWith("node:")) {
    throw new ImportRefused(specifier, parentFile, "Node.js built-in modules are not available to plugins");
  }
  const relative = specifier.startsWith("./") || specifier.startsWith("../");
  const absolute = specifier.startsWith("/") || specifier.startsWith("file:");
  if (!relative && !absolute) {
    throw new ImportRefused(
      specifier,
      parentFile,
      "only @covel/plugin-handlers-utils, zod and files inside the package can be imported; bundle other dependencies into the plugin",
    );
  }
  if (absolute) {
    throw new ImportRefused(specifier, parentFile, "absolute paths are not allowed; import package files by relative path");
  }
  const target = new URL(specifier, context.parentURL);
  let real;
  try {
    real = realpathSync(fileURLToPath(target));
  } catch {
    real = fileURLToPath(target);
  }
  if (!isInside(root, real)) {
    throw new ImportRefused(specifier, parentFile, "it resolves outside the package folder");
  }
  const resolved = nextResolve(specifier, context);
  return { ...resolved, url: withLoadTag(pathToFileURL(real).href, context.parentURL), shortCircuit: true };
}

function load(url, context, nextLoad) {
  // Covel loads a package's .js files as ES modules; no package.json is needed or read.
  if (rootOf(url) && /\.(m?js)(\?|$)/.test(url)) {
    return nextLoad(url, { ...context, format: "module" });
  }
  return nextLoad(url, context);
}

let installed = false;
export function installResolver() {
  if (installed) return;
  registerHooks({ resolve, load });
  installed = true;
}

export { SDK_URL };
