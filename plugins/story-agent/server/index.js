// story-agent registers one RPC action: /threads lists the threads the storyteller keeps.

export default function register(covel) {
  covel.registerRpc("list-threads", async (_payload, ctx) => {
    const rows = await ctx.store.listPluginData("threads");
    const threads = rows.map((row) => row.value).filter((t) => t && t.status === "open");
    return { ok: true, data: threads };
  });
}
