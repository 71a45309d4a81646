// The channel to Python: frames (a 4-byte big-endian length, then UTF-8 JSON) written to the
// host's output pipe, the log lines plugin code writes (rate-limited per package), and the ctx
// callbacks a call makes to Python (toPython), answered by settleCallback.
import fs from "node:fs";
import { AsyncLocalStorage } from "node:async_hooks";
import { format } from "node:util";
import { errorFrame, HostError } from "./errors.mjs";
import { LOG_RATE, MAX_DEPTH, MAX_FRAME_BYTES, MAX_LOG_CHARS, OUT_FD } from "./settings.mjs";

// The host's own references: a plugin that patches JSON or Buffer changes its own values, not
// how the host frames them.
export const stringify = JSON.stringify;
export const parseJson = JSON.parse;
export const bufferFrom = Buffer.from;

export function writeFrame(body) {
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
export function send(message) {
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

export const current = new AsyncLocalStorage(); // {package, runtime} of the code running now

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

export function log(level, message, where = current.getStore()) {
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
export function writeOutput(stream, text) {
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

export function toPython(call, method, params) {
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

export function settleCallback(message) {
  const entry = waiting.get(message.id);
  if (!entry) return;
  waiting.delete(message.id);
  if (message.type === "result") entry.resolve(message.result);
  else {
    const hint = message.error?.hint;
    entry.reject(new HostError(message.error?.code ?? "callback_failed", message.error?.message ?? "callback failed", hint ? { hint } : undefined));
  }
}
