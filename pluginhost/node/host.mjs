// Covel Hub's JavaScript plugin host: a long-lived Node process driven by Python over a framed
// JSON channel on two dedicated pipes (never stdout/stderr). Frames are a 4-byte big-endian
// length followed by UTF-8 JSON. Python runs one host for the bundled packages of a worker and
// one per community package version (pluginhost/pool.py); COVEL_HOST_TRUST says which this is.
//
// Python -> host:  {type:"call", id, method, params}        host -> Python: {type:"result"|"error", id, ...}
// host -> Python:  {type:"call", id, callId, method, params} (a ctx callback belonging to call callId)
// host -> Python:  {type:"log", level, package, runtime, message}
// Python -> host:  {type:"ping", id}                        host -> Python: {type:"pong", id}
//
// The pieces, each with its own concern:
//   settings.mjs      the COVEL_HOST_* settings, taken out of process.env first
//   walls.mjs         containment state: the walls this host raised, reported in the ready frame
//                     (contain.mjs: the process's outside reach; freeze.mjs: the frozen realm;
//                     resolver.mjs: imports)
//   framing.mjs       frames, log lines and ctx callbacks to Python
//   registration.mjs  loading a package and checking its registrations
//   ctx_store.mjs     ctx.store;  ctx.mjs: the other ctx objects
//   methods.mjs       the call table
// This file wires them: it applies the walls, reads frames and dispatches calls.
import net from "node:net";
import { stripTypeScriptTypes } from "node:module";
import { IN_FD } from "./settings.mjs";
import { exitHost, lockDown } from "./contain.mjs";
import { installResolver } from "./resolver.mjs";
import { errorFrame, HostError } from "./errors.mjs";
import { current, log, parseJson, send, settleCallback, stringify, bufferFrom, writeFrame, writeOutput } from "./framing.mjs";
import { calls, methods, newCall } from "./methods.mjs";
import { raiseWalls } from "./walls.mjs";

// Every host, bundled or community, drops network globals and the process's outside reach before
// any plugin module loads (contain.mjs).
lockDown({
  refuse: (code, message) => new HostError(code, message),
  write: (stream, text) => writeOutput(stream, text),
});
installResolver();

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

// The walls (walls.mjs) are raised last, after the host's own objects exist, and reported to the
// supervisor, which refuses a host that lacks one it needs.
// The pipe handle under the socket too: Node calls its methods (readStart) by lookup.
const walls = await raiseWalls({ instances: [input, input._handle, current].filter(Boolean) });
send({ type: "ready", pid: process.pid, node: process.version, ...walls });
