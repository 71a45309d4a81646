// Registers the cast tool and two hooks. Plain ESM, as Covel's own packages are.
export default function register(covel) {
  const { tool, z } = covel.toolkit;
  covel.registerTool(
    tool({
      name: "sync-cast",
      description: "Create and update cast records in one batch.",
      parameters: z.object({
        creates: z.array(z.object({ id: z.string(), name: z.string() })).max(5),
        updates: z.array(z.object({ id: z.string() }).passthrough()).max(10),
      }),
      async execute(params) {
        return { created: params.creates.length, updated: params.updates.length };
      },
    }),
  );
  covel.registerHook("PostRuntime", async () => undefined);
  covel.registerHook("PreStateCommit", async () => undefined, { enforce: "pre" });
}
