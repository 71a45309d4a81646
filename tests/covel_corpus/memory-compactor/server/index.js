/**
 * Unified server entry (PLUGIN.md `entry`): history compaction without a model.
 *
 * The host asks once the prompt passes its threshold. The provider picks the oldest
 * uncompacted messages outside the protected tail (the last two player turns and the last
 * five messages, as Covel's default compactor does) and returns one summary for them; when
 * the summaries would pass their segment limit it merges the oldest two first.
 */

const PROTECT_USER_TURNS = 2;
const PROTECT_MESSAGES = 5;

function protectedFrom(messages) {
  const tail = Math.max(0, messages.length - PROTECT_MESSAGES);
  let seen = 0;
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    if (messages[i].role === "user" && ++seen >= PROTECT_USER_TURNS) return Math.min(tail, i);
  }
  return 0;
}

function fit(text, maxTokens) {
  const limit = maxTokens * 4;
  return text.length <= limit ? { content: text, truncated: false } : { content: `${text.slice(0, limit - 1)}…`, truncated: true };
}

function summarise(messages) {
  return messages.map((m) => `${m.role === "user" ? "Player" : "Story"}: ${m.content}`).join("\n");
}

export default function (covel) {
  covel.provideExtension("history.compact@2", "rolling-summary", {
    async handler(input) {
      const toCompact = input.messages.slice(0, protectedFrom(input.messages));
      if (toCompact.length === 0) return null;
      // A player who writes "forge" makes the provider name a message that is not there:
      // the host must refuse the whole result and keep the history.
      const ids = toCompact.map((m) => m.id);
      if (toCompact.some((m) => /forge/i.test(m.content))) ids.push("not-a-message");
      const { maxSegmentTokens, maxSegments } = input.summaryBudget;
      const summaries = [];
      const existing = input.existingSummaries;
      if (existing.length + 1 > maxSegments && existing.length >= 2) {
        const merged = fit(existing.slice(0, 2).map((s) => s.content).join("\n"), maxSegmentTokens);
        summaries.push({ messageIds: [], replacesSummaryIds: [existing[0].id, existing[1].id], focusSections: [], ...merged });
      }
      summaries.push({ messageIds: ids, replacesSummaryIds: [], focusSections: ["Key events"], ...fit(summarise(toCompact), maxSegmentTokens) });
      return { summaries };
    },
  });
}
