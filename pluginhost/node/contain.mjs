// What plugin code may reach of the process it runs in. host.mjs calls lockDown() once, after its
// own imports and before any plugin module loads, in every host (bundled and community):
//
// - network-capable globals (fetch, WebSocket, EventSource, web storage) are gone: plugin HTTP
//   goes through covel.http, which Python sends through the approved, SSRF-guarded client;
// - `process` keeps what describes the process and loses what reaches outside it: built-in
//   modules and native code by the back door, ending or re-configuring the process, replacing its
//   image, reading env files, writing reports, signalling other processes' inspectors, and the
//   lists of live handles (which would hand out the channel's socket);
// - stdout, stderr and stdin are stand-ins: what a plugin writes becomes log frames that the host
//   tags with the package running now, so no plugin reaches the real pipes (or their socket
//   class, which could open TCP connections where no network namespace stops it);
// - process.env holds only the few variables the supervisor set (no variable of the hub's).
//
// The host keeps its own references to the methods it needs (exitHost()).
import { Readable, Writable } from "node:stream";

const realExit = process.exit.bind(process);
const realReallyExit = process.reallyExit.bind(process);
let hostExiting = false;

/** End the host: only the host's own code can (the public process.exit refuses plugins). */
export function exitHost(code) {
  hostExiting = true;
  realExit(code);
}

// Globals that open connections or persist data outside covel.http's reach.
export const NETWORK_GLOBALS = ["fetch", "WebSocket", "WebSocketStream", "EventSource", "localStorage", "sessionStorage"];
// process methods that reach other code, other processes, files or the process's own identity.
const IMPORT_DOORS = ["getBuiltinModule", "binding", "_linkedBinding", "dlopen"];
const OUTSIDE = [
  "exit", "abort", "kill", "_kill", "chdir", "execve", "loadEnvFile", "openStdin",
  "setuid", "setgid", "seteuid", "setegid", "setgroups", "initgroups",
  "_debugProcess", "_debugEnd", "_startProfilerIdleNotifier", "_stopProfilerIdleNotifier",
  "setUncaughtExceptionCaptureCallback", "_getActiveHandles", "_getActiveRequests",
];
// The variables the supervisor sets for the host itself; read once here, then removed.
const HOST_VARIABLES = /^COVEL_HOST_/;

/** The host's own settings (the COVEL_HOST_* variables), removed from process.env. */
export function takeHostSettings() {
  const settings = {};
  for (const name of Object.keys(process.env)) {
    if (HOST_VARIABLES.test(name)) {
      settings[name] = process.env[name];
      delete process.env[name];
    }
  }
  return settings;
}

/**
 * Apply the walls. refuse(code, message) makes the error a refused capability throws; write(stream,
 * text) receives what plugin code writes to process.stdout / process.stderr / process._rawDebug.
 */
export function lockDown({ refuse, write }) {

  for (const name of NETWORK_GLOBALS) delete globalThis[name];
  // undici keeps its dispatcher on a global symbol once fetch was used; the host never uses it.
  delete globalThis[Symbol.for("undici.globalDispatcher.1")];

  const replace = (name, fn) => {
    Object.defineProperty(process, name, { value: fn, writable: true, configurable: true, enumerable: false });
  };
  for (const name of IMPORT_DOORS) {
    replace(name, () => {
      throw refuse("plugin_import_refused", `process.${name} is not available to plugins`);
    });
  }
  for (const name of OUTSIDE) {
    if (!(name in process)) continue;
    replace(name, () => {
      throw refuse("host_capability_refused", `process.${name} is not available to plugins`);
    });
  }
  // process.exit looks process.reallyExit up at call time, so that one lets only the host through.
  replace("reallyExit", (code) => {
    if (!hostExiting) throw refuse("host_capability_refused", "process.reallyExit is not available to plugins");
    realReallyExit(code);
  });
  // Reading the mask is harmless; setting it changes every file the process would create.
  const realUmask = process.umask.bind(process);
  replace("umask", (mask) => {
    if (mask !== undefined) throw refuse("host_capability_refused", "process.umask(mask) is not available to plugins");
    return realUmask();
  });
  // A report holds the environment, the network interfaces and the open handles, and can be
  // written to any path: none of it is for plugins.
  const report = Object.freeze({
    compact: false,
    directory: "",
    filename: "",
    reportOnFatalError: false,
    reportOnSignal: false,
    reportOnUncaughtException: false,
    signal: "SIGUSR2",
    excludeNetwork: true,
    getReport() {
      throw refuse("host_capability_refused", "process.report is not available to plugins");
    },
    writeReport() {
      throw refuse("host_capability_refused", "process.report is not available to plugins");
    },
  });
  Object.defineProperty(process, "report", { get: () => report, configurable: true, enumerable: true });
  replace("_rawDebug", (...args) => write("stderr", args.map(String).join(" ")));

  // No absolute server path in what describes the process: the permission model's read list
  // (--allow-fs-read=<folder>), the host script, Node's own location and the working folder.
  const execArgv = Object.freeze(process.execArgv.map((arg) => arg.replace(/^(--[a-z-]+=)(.*[\\/].*)$/, "$1<path>")));
  const argv = ["node", "host.mjs"];
  Object.defineProperty(process, "execArgv", { get: () => execArgv, configurable: true, enumerable: true });
  Object.defineProperty(process, "argv", { get: () => argv, configurable: true, enumerable: true });
  Object.defineProperty(process, "execPath", { get: () => "node", configurable: true, enumerable: true });
  replace("cwd", () => "/");

  const sink = (which) => new Writable({
    decodeStrings: false,
    write(chunk, encoding, done) {
      write(which, typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8"));
      done();
    },
  });
  const streams = { stdout: sink("stdout"), stderr: sink("stderr"), stdin: Readable.from([]) };
  for (const [name, stream] of Object.entries(streams)) {
    stream.isTTY = false;
    stream.fd = undefined;
    Object.defineProperty(process, name, { get: () => stream, configurable: true, enumerable: true });
  }
}
