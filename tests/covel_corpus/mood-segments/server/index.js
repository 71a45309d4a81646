/**
 * Unified server entry (PLUGIN.md `entry`): the mood's prompt segments. Each provider reads
 * the mood this package committed on an earlier turn; a session without one gets nothing.
 */

const MOODS = "moods";

// An extension's ctx.pluginData.get returns the whole row; the value is in .value.
async function currentMood(ctx) {
  const row = await ctx.pluginData.get(MOODS, "current");
  return row?.value ?? null;
}

export default function (covel) {
  covel.provideExtension("prompt.segment@1", "current-mood", {
    async handler(_input, ctx) {
      const current = await currentMood(ctx);
      if (!current) return [];
      return [
        {
          id: "current-mood",
          content: `<mood>\nThe story is ${current.mood} (set on turn ${current.turn}).\n</mood>`,
          position: "system",
          audience: "story",
          volatility: "session",
        },
      ];
    },
  });

  covel.provideExtension("prompt.segment@1", "mood-reminder", {
    async handler(input, ctx) {
      if (/shatter/i.test(input.playerMessage)) {
        throw new Error("the mood shattered");
      }
      const current = await currentMood(ctx);
      if (!current) return [];
      return [
        {
          id: "mood-reminder",
          content: `Keep the ${current.mood} mood in this reply.`,
          position: "post-history",
          role: "user",
          audience: "all",
          volatility: "turn",
        },
      ];
    },
  });

  // Only this package's own agent runtimes would read it (it has none): never the story's.
  covel.provideExtension("prompt.segment@1", "mood-notes", {
    handler: () => [
      {
        id: "mood-notes",
        content: "<mood-notes>private</mood-notes>",
        position: "pre-history",
        audience: "self",
        volatility: "stable",
      },
    ],
  });
}
