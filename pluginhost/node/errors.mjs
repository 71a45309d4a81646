// The host's coded errors: every failure that leaves the host carries a stable snake_case code.

export class HostError extends Error {
  constructor(code, message, details) {
    super(message);
    this.code = code;
    if (details !== undefined) this.details = details;
  }
}

export function errorFrame(id, error) {
  const code = error?.code && typeof error.code === "string" ? error.code : "plugin_failed";
  return { type: "error", id, error: { code, message: error?.message ?? String(error), details: error?.details ?? null } };
}

export function withTimeout(promise, ms, onTimeout) {
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
