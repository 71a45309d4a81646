// Static import check of a package's code: parse every module the entry and the handlers reach,
// and resolve each static import by the host's rules (resolver.mjs), without running anything.
// Used for community code that staff have not approved yet, which must never run.
//
// One process checks many packages (a sync checks thousands; a Node start costs more than a
// package's check): one request per stdin line, one answer per stdout line, in order.
// stdin line: {"root": "/abs/package", "files": ["server/index.js", "runtimes/a/handler.ts", ...]}
// stdout line: {"ok": bool, "files": [...checked], "errors": [{"code", "file", "line", "message"}]}
// Packages share nothing but the process: each check starts from its own request and keeps no
// state, so one package's files cannot change another's verdict. The caller (codecheck.py)
// times each answer and starts a fresh process for the rest when one hangs or kills this one.
//
// Parsing is vm.SourceTextModule (needs --experimental-vm-modules): constructing one parses the
// module and lists its static import specifiers; it is never linked or evaluated. TypeScript is
// stripped first (module.stripTypeScriptTypes keeps every position). A syntax error's line comes
// from `node --check` on the same text, which parses and runs nothing either. import() with a
// computed specifier cannot be known statically; the real load checks it once approved.
import { spawnSync } from "node:child_process";
import { builtinModules, stripTypeScriptTypes } from "node:module";
import { readFileSync, realpathSync } from "node:fs";
import { createInterface } from "node:readline";
import path from "node:path";
import vm from "node:vm";
import { ALLOWED_BUILTINS, existingTarget, isFile, isInside } from "./resolver.mjs";

const ALLOWED = new Set(ALLOWED_BUILTINS);
const BUILTINS = new Set(builtinModules);
const MAX_FILES = 500;

function syntaxLine(code) {
  const check = spawnSync(process.execPath, ["--check", "--input-type=module", "-"], {
    input: code,
    encoding: "utf8",
    timeout: 10000,
  });
  const match = /^\[stdin\]:(\d+)/m.exec(check.stderr || "");
  return match ? Number(match[1]) : null;
}

function checkPackage(request) {
  const root = realpathSync(request.root);
  const errors = [];
  const seen = new Set();
  const queue = [];
  for (const file of request.files) {
    const full = path.resolve(root, file);
    if (!isInside(root, full) || !isFile(full)) {
      errors.push({ code: "module_not_found", file, line: null, message: `${file}: no such file in the package` });
      continue;
    }
    queue.push(realpathSync(full));
  }
  while (queue.length && seen.size < MAX_FILES) {
    const file = queue.shift();
    if (seen.has(file)) continue;
    seen.add(file);
    const rel = path.relative(root, file);
    let code = readFileSync(file, "utf8");
    if (/\.m?ts$/.test(file)) {
      try {
        code = stripTypeScriptTypes(code);
      } catch (error) {
        errors.push({ code: "module_syntax_error", file: rel, line: null, message: `${rel}: ${error.message}` });
        continue;
      }
    }
    let specifiers;
    try {
      specifiers = new vm.SourceTextModule(code, { identifier: rel }).dependencySpecifiers;
    } catch (error) {
      const line = syntaxLine(code);
      const where = line ? `${rel}:${line}` : rel;
      errors.push({ code: "module_syntax_error", file: rel, line, message: `${where}: ${error.name}: ${error.message}` });
      continue;
    }
    for (const specifier of specifiers) {
      const problem = check(specifier, file, root, rel, queue);
      if (problem) errors.push(problem);
    }
  }
  return { ok: errors.length === 0, files: [...seen].map((f) => path.relative(root, f)), errors };
}

function check(specifier, file, root, rel, queue) {
  const refused = (reason) => ({
    code: "plugin_import_refused",
    file: rel,
    line: null,
    message: `import "${specifier}" from ${rel} is refused: ${reason}`,
  });
  if (specifier === "@covel/plugin-handlers-utils" || specifier === "zod" || specifier.startsWith("zod/")) return null;
  const bare = specifier.startsWith("node:") ? specifier.slice(5) : specifier;
  if (specifier.startsWith("node:") || BUILTINS.has(bare)) {
    if (ALLOWED.has(bare)) return null;
    return refused(`the Node.js built-in "${bare}" reaches outside the plugin host; plugins may import only ${ALLOWED_BUILTINS.join(", ")}`);
  }
  if (!specifier.startsWith("./") && !specifier.startsWith("../")) {
    if (specifier.startsWith("/") || specifier.startsWith("file:")) {
      return refused("absolute paths are not allowed; import package files by relative path");
    }
    return refused("only @covel/plugin-handlers-utils, zod, the pure Node.js built-ins and files inside the package can be imported; bundle other dependencies into the plugin");
  }
  const lexical = existingTarget(path.resolve(path.dirname(file), specifier));
  let real = lexical;
  if (lexical) {
    try {
      real = realpathSync(lexical);
    } catch {
      real = lexical;
    }
  }
  if (real && !isInside(root, real)) return refused("it resolves outside the package folder");
  if (!real && !isInside(root, path.resolve(path.dirname(file), specifier))) {
    return refused("it resolves outside the package folder");
  }
  if (!real) {
    return { code: "module_not_found", file: rel, line: null, message: `import "${specifier}" from ${rel}: no such file in the package` };
  }
  queue.push(real);
  return null;
}

async function main() {
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    let answer;
    try {
      answer = checkPackage(JSON.parse(line));
    } catch (error) {
      // The package's folder vanished or a file could not be read: this package's verdict only.
      answer = { ok: false, files: [], errors: [{ code: "static_check_failed", file: "", line: null, message: `the static check failed: ${error.message}` }] };
    }
    process.stdout.write(JSON.stringify(answer) + "\n");
  }
}

await main();
