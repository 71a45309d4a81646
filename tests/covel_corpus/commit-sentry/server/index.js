const FORBIDDEN = /\bforbidden\b/i;
// What the sentry's hooks saw, per session: hooks cannot write plugin data.
const logs = new Map();

function remember(ctx, entry) {
  const list = logs.get(ctx.sessionId) ?? [];
  list.push({ event: ctx.event, turnId: ctx.turnId, ...entry });
  logs.set(ctx.sessionId, list);
}

function notes(payload) {
  return (payload?.proposals ?? []).map((p) => p?.payload?.value?.note).filter((n) => typeof n === "string");
}

export default function register(covel) {
  // Phase pre: the gate. Any proposal of the batch carrying the word refuses the batch.
  covel.registerHook(
    "PreStateCommit",
    async (ctx, payload) => {
      const bad = notes(payload).find((n) => FORBIDDEN.test(n));
      remember(ctx, { phase: "pre", notes: notes(payload), vetoed: Boolean(bad) });
      return bad ? { action: "abort", reason: "the ledger refuses a forbidden word" } : { action: "continue" };
    },
    { enforce: "pre" },
  );
  // Phase normal: only reached when the gate let the batch through.
  covel.on("PreStateCommit", async (ctx, payload) => {
    remember(ctx, { phase: "normal", notes: notes(payload) });
    return { action: "continue" };
  });
  // A watcher that always fails: its failure is recorded and changes nothing of the commit.
  covel.on("PostStateCommit", async () => {
    throw new Error("the sentry's bell is cracked");
  });
  covel.registerHook(
    "PostStateCommit",
    async (ctx, payload) => {
      remember(ctx, { phase: "post", notes: notes(payload), committed: payload?.result?.committed === true });
      return { action: "continue" };
    },
    { enforce: "post" },
  );

  covel.registerRpc("sentry-log", async (_payload, ctx) => ({ ok: true, data: logs.get(ctx.sessionId) ?? [] }));
}
