// The counting rule lives in a tool, so the ring runtime (and any agent given the tool) share it.
export default function register(covel) {
  const { tool, z } = covel.toolkit;
  covel.registerTool(
    tool({
      name: "count-rings",
      description: 'Count how many times a text says "ring".',
      parameters: z.object({ text: z.string().max(20000) }),
      async execute({ text }) {
        return { times: (text.match(/\bring\b/gi) ?? []).length };
      },
    }),
  );
}
