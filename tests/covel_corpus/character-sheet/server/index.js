const SHEET = "sheet";
const calls = new Map(); // sessionId -> [{runtimeId, messages}]

export default function register(covel) {
  // Covel's command dispatch hands {args: {...}}; the answer is {ok, message, data}.
  covel.registerRpc("set-stat", async (payload, ctx) => {
    const args = payload?.args ?? {};
    if (typeof args.stat !== "string" || !Number.isInteger(args.value)) {
      return { ok: false, message: "Use /stat <strength|wits|grace> <number>.", data: { code: "usage" } };
    }
    const row = await ctx.store.getPluginData(SHEET, "player");
    const sheet = { ...(row?.value ?? {}), [args.stat]: args.value };
    await ctx.store.setPluginData({ namespace: SHEET, key: "player", value: sheet });
    return { ok: true, message: `${args.stat} is now ${args.value}.`, data: sheet };
  });

  covel.provideExtension("prompt.segment@1", "sheet", {
    async handler(_input, ctx) {
      const row = await ctx.pluginData.get(SHEET, "player");
      if (!row?.value) return [];
      const lines = Object.entries(row.value).map(([stat, value]) => `${stat}: ${value}`);
      return [
        {
          id: "character-sheet",
          content: `<character-sheet>\n${lines.join("\n")}\n</character-sheet>`,
          position: "system",
          audience: "story",
          volatility: "session",
        },
      ];
    },
  });

  covel.on("PreLLMCall", async (ctx, payload) => {
    const list = calls.get(ctx.sessionId) ?? [];
    list.push({
      event: ctx.event,
      runtimeId: payload.runtimeId ?? null,
      ctxRuntimeId: ctx.runtimeId ?? null,
      activePluginIds: [...(ctx.activePluginIds ?? [])].sort(),
      messages: payload.messages?.length ?? 0,
    });
    calls.set(ctx.sessionId, list);
    return { action: "continue" };
  });

  covel.registerRpc("llm-calls", async (_payload, ctx) => ({ ok: true, data: calls.get(ctx.sessionId) ?? [] }));
}
