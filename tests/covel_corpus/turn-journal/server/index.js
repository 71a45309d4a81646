// Hooks have no store and cannot write plugin data, so the journal lives in the entry module
// (one host keeps it for the worker's life) and the journal action reads it back.
const journals = new Map();

function note(ctx, entry) {
  const list = journals.get(ctx.sessionId) ?? [];
  list.push({ event: ctx.event, turnId: ctx.turnId || null, ...entry });
  journals.set(ctx.sessionId, list);
  return { action: "continue" };
}

export default function register(covel) {
  covel.on("SessionStart", async (ctx, payload) => note(ctx, { worldId: payload?.worldId ?? null }));
  covel.on("TurnStart", async (ctx, payload) =>
    note(ctx, { playerMessage: payload?.playerMessage ?? "", activeRuntimes: payload?.activeRuntimes ?? [] }),
  );
  covel.on("PreRuntime", async (ctx, payload) => note(ctx, { runtimeId: payload?.manifest?.runtimeId ?? null }));
  covel.on("PostRuntime", async (ctx, payload) =>
    note(ctx, { runtimeId: payload?.result?.runtime ?? null, status: payload?.result?.status ?? null }),
  );
  covel.on("TurnStop", async (ctx, payload) =>
    note(ctx, { runtimes: (payload?.runtimeResults ?? []).map((r) => `${r.runtime}:${r.status}`) }),
  );
  covel.on("SessionEnd", async (ctx, payload) => note(ctx, { reason: payload?.reason ?? null }));

  covel.registerRpc("journal", async (_payload, ctx) => ({ ok: true, data: journals.get(ctx.sessionId) ?? [] }));
}
