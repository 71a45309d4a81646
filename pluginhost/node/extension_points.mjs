// The kernel extension points a package may provide with provideExtension(point, id, provider),
// as Covel defines them (ackness/covel, its shared extension-point contracts): each point's input
// and output shape, how its providers compose (mode) and its time limit. Python calls one
// provider at a time (the host's `extension` method) and composes their results; this file only
// checks what goes in and what comes out.
import { z } from "zod";

// The kernel UI slots a ui.slot@1 provider may fill, and the value each one takes.
const text = z.union([z.string(), z.record(z.string(), z.string())]); // a text, or one per locale
const tone = z.enum(["info", "success", "warning", "danger"]);
const mediaRef = z.looseObject({ id: z.string().optional(), url: z.string().optional() });
const summaryEntryBase = { id: z.string().min(1).max(64), label: text };
const SLOT_VALUES = {
  "session.summary@1": z.strictObject({
    entries: z.array(z.discriminatedUnion("kind", [
      z.strictObject({ ...summaryEntryBase, kind: z.literal("text"), value: text, tone: tone.optional() }),
      z.strictObject({ ...summaryEntryBase, kind: z.literal("meter"), value: z.number(), max: z.number(), min: z.number().optional(), tone: tone.optional() }),
      z.strictObject({ ...summaryEntryBase, kind: z.literal("list"), items: z.array(text).max(24), total: z.number().int().nonnegative().optional() }),
    ])).max(16),
  }),
  "stage.backdrop@1": z.strictObject({ sceneId: z.string().optional(), name: z.string().optional(), ref: mediaRef.optional(), variant: z.enum(["day", "night"]).optional(), label: text.optional(), preload: z.array(mediaRef).optional() }),
  "stage.choices@1": z.strictObject({
    turnId: z.string().optional(),
    scene: text.optional(),
    recap: text.optional(),
    decision: text.optional(),
    choices: z.array(z.strictObject({ id: z.string().min(1), text: z.string(), label: text.optional() })).max(64),
  }),
  "stage.music@1": z.strictObject({ trackId: z.string().optional(), title: text.optional(), ref: mediaRef.optional(), loop: z.boolean().optional(), volume: z.number().min(0).max(1).optional(), fadeMs: z.number().nonnegative().optional() }),
};
export const UI_SLOTS = Object.keys(SLOT_VALUES);

const historyMessage = z.looseObject({
  id: z.string(),
  sessionId: z.string(),
  turnId: z.string(),
  sourceType: z.string(),
  role: z.string(),
  content: z.string(),
  name: z.string().optional(),
  order: z.number(),
  createdAt: z.string(),
});

const segment = z.strictObject({
  id: z.string().min(1),
  content: z.string(),
  position: z.union([z.enum(["system", "pre-history", "post-history"]), z.strictObject({ depth: z.number().int().nonnegative() })]),
  role: z.enum(["system", "user", "assistant"]).optional(),
  audience: z.union([z.enum(["all", "story", "self"]), z.strictObject({ contract: z.string().min(1) })]),
  volatility: z.enum(["stable", "session", "turn"]),
  order: z.number().int().optional(),
  providerPluginId: z.string().optional(),
});

const summary = z.strictObject({
  id: z.string(),
  sessionId: z.string(),
  turnRangeStart: z.string(),
  turnRangeEnd: z.string(),
  content: z.string(),
  focusSections: z.array(z.string()),
  createdAt: z.string(),
});

export const POINTS = {
  "prompt.segment@1": {
    mode: "collect",
    timeoutMs: 500,
    input: z.strictObject({ turnId: z.string(), playerMessage: z.string() }),
    output: z.array(segment),
    // Attribution is the host's: a provider cannot speak for another package.
    attribute: (segments, pluginId) => segments.map((s) => ({ ...s, providerPluginId: pluginId })),
  },
  "prompt.history-transform@1": {
    mode: "pipeline",
    timeoutMs: 500,
    input: z.strictObject({ messages: z.array(historyMessage), turnId: z.string() }),
    output: z.strictObject({ messages: z.array(historyMessage) }),
  },
  "history.compact@2": {
    mode: "single",
    timeoutMs: 60000,
    input: z.strictObject({
      messages: z.array(historyMessage),
      existingSummaries: z.array(summary),
      contextWindow: z.number().positive(),
      inputWindow: z.number().positive(),
      summaryBudget: z.strictObject({ maxTokens: z.number().int().positive(), maxSegmentTokens: z.number().int().positive(), maxSegments: z.number().int().positive() }),
      estimatedTokens: z.number().nonnegative(),
      locale: z.string(),
    }),
    output: z.strictObject({
      summaries: z.array(z.strictObject({
        messageIds: z.array(z.string()),
        replacesSummaryIds: z.array(z.string()),
        content: z.string().min(1),
        focusSections: z.array(z.string()),
        truncated: z.boolean().optional(),
      })).min(1),
    }).nullable(),
  },
  "ui.slot@1": {
    mode: "pipeline",
    timeoutMs: 500,
    input: z.strictObject({
      slot: z.enum(UI_SLOTS),
      key: z.string().optional(),
      previous: z.unknown(),
      events: z.array(z.strictObject({ topic: z.string(), data: z.record(z.string(), z.unknown()), turnId: z.string(), pluginId: z.string().optional() })),
    }),
    output: z.unknown(),
    // The value must fit the slot the provider declared (null clears it).
    attribute: (value, _pluginId, slot) => (value === null ? null : SLOT_VALUES[slot].parse(value)),
  },
};

// Points Covel defines that have no counterpart here: refused when a package registers one.
export const UNSUPPORTED = {
  "session.world-context@1": "the hub's world (characters, data, settings) comes from the world package and its sources, and no plugin may replace it; this hub has no world dimensions either",
  "media.image-flow@1": "the hub has no image pipeline that would run the flow's runtimes",
};
