// Registers the cast tool and two hooks. Plain ESM, as Covel's own packages are.
export default function register(covel) {
  covel.registerTool({
    name: "sync-cast",
    description: "Create and update cast records in one batch.",
    inputSchema: { type: "object", properties: { creates: { type: "array" }, updates: { type: "array" } } },
    async handler(args) {
      return { created: (args.creates ?? []).length, updated: (args.updates ?? []).length };
    },
  });
  covel.registerHook("PostRuntime", async () => undefined);
  covel.registerHook({ event: "PreStateCommit", enforce: "pre" }, async () => undefined);
}
