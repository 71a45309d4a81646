// Cases for tests/pluginhost/test_sdk_exports.py: each entry runs one SDK export on the inputs
// Covel's own tests use; the Python test holds the results Covel's tests expect.
import * as sdk from "../../pluginhost/node/sdk.mjs";

const sorted = (set) => [...set].sort();
const messages = {
  translations: { "World time: {display}": "世界时间：{display}", Success: "成功" },
  labels: { Success: { zh: "成功", ja: "成功だ" } },
};
const ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;
const envelope = { entity: "rule", idPattern: ID, idError: "rule.id must be 1-128 characters" };
const thrown = (fn) => {
  try {
    fn();
    return null;
  } catch (error) {
    return error.message;
  }
};
const ctx = { pluginId: "dice", runtimeId: "roller", turnId: "t1", sessionId: "s1" };
const proposal = (type, payload, pluginId = "p") => ({ id: "x", type, source: { pluginId, runtimeId: pluginId }, turnId: "t", sessionId: "s", payload, timestamp: "" });
const nodes = [
  { id: "rin", name: "Rin" },
  { id: "pres", name: "Saegusa", aliases: ["President"] },
  { id: "vice", name: "Shiraishi", aliases: ["Vice President Shiraishi"] },
];
const cjk = [
  { id: "chair", name: "三枝遥", aliases: ["会长"] },
  { id: "vice", name: "白石悠真", aliases: ["副会长"] },
  { id: "rin", name: "凛" },
  { id: "kaicho", name: "生徒会長", aliases: ["会長"] },
  { id: "fuku", name: "副会長" },
];

export const cases = {
  translate: () => [
    sdk.translate({ messages }, "World time: {display}", { display: "09:00" }),
    sdk.translate({ messages }, "Success"),
    sdk.translate({ messages }, "Failure"),
    sdk.translate({}, "Rolled {n}", { n: 3 }),
    sdk.translate(undefined, "Rolled {n}", { n: 3 }),
    sdk.translate(undefined, "{a} and {b}", { a: 1 }),
    sdk.translate({ messages }, "constructor"),
    sdk.translate(undefined, "{constructor}", {}),
  ],
  labelText: () => [sdk.labelText({ messages }, "Success"), sdk.labelText({ messages }, "Failure"), sdk.labelText(undefined, "Success"), sdk.labelText({ messages }, "toString")],
  pickLocaleText: () => ["ZH_cn", "zh-Hans", "zh-Hant-TW", "zh-TW", "en_GB", undefined].map((l) => sdk.pickLocaleText(l, "中文", "English")),
  splitList: () => [sdk.splitList("a, b，c\nd"), sdk.splitList([" x ", 1, "", "y"]), sdk.splitList(42), sdk.splitList(undefined), sdk.splitList(Array.from({ length: 40 }, (_, i) => `k${i}`)).length],
  readManualEntity: () => {
    const seen = [];
    return [
      sdk.readManualEntity({ ruleJson: '{"id":"a"}' }, "rule", () => ({})),
      thrown(() => sdk.readManualEntity({ ruleJson: "{bad" }, "rule", () => ({}))),
      sdk.readManualEntity({ ruleForm: { title: "t" } }, "rule", (form) => (seen.push(form), { built: true })),
      seen,
      sdk.readManualEntity({ rule: { id: "r" } }, "rule", () => ({})),
      sdk.readManualEntity("nope", "rule", () => ({})) === undefined,
    ];
  },
  assertEntityEnvelope: () => [
    sdk.assertEntityEnvelope({ id: "r1", extra: 1 }, envelope),
    sdk.assertEntityEnvelope({ id: "r1" }, { ...envelope, build: (base) => ({ ...base, kind: "constant" }) }),
    sdk.assertEntityEnvelope({ characterId: "c1" }, { entity: "presence", idField: "characterId", idPattern: ID, idError: "bad" }),
    thrown(() => sdk.assertEntityEnvelope(undefined, envelope)),
    thrown(() => sdk.assertEntityEnvelope({}, envelope)),
    thrown(() => sdk.assertEntityEnvelope({ id: "../x" }, envelope)),
    thrown(() => sdk.assertEntityEnvelope({ id: "r1", schemaVersion: 2 }, envelope)),
    thrown(() => sdk.assertEntityEnvelope({ id: "r1", blob: "x".repeat(70000) }, envelope)),
  ],
  abortSignalWithTimeout: () => {
    const controller = new AbortController();
    const combined = sdk.abortSignalWithTimeout(controller.signal, 60000);
    const before = combined.aborted;
    controller.abort(new Error("turn stopped"));
    const alone = sdk.abortSignalWithTimeout(undefined, 60000);
    return [before, combined.aborted, combined.reason.message, alone instanceof AbortSignal, alone.aborted];
  },
  normalizeRequiredString: () => [sdk.normalizeRequiredString("  a ", "f"), thrown(() => sdk.normalizeRequiredString("  ", "name")), thrown(() => sdk.normalizeRequiredString(3, "n"))],
  optionalString: () => [sdk.optionalString(" a "), sdk.optionalString("  ") ?? null, sdk.optionalString(1) ?? null],
  optionalNumber: () => [sdk.optionalNumber(1.5), sdk.optionalNumber(" 2.5 "), sdk.optionalNumber("x") ?? null, sdk.optionalNumber(Infinity) ?? null, sdk.optionalNumber("") ?? null],
  optionalInteger: () => [sdk.optionalInteger(3), sdk.optionalInteger("4"), sdk.optionalInteger("4.5") ?? null, sdk.optionalInteger(2.5) ?? null],
  compactRecord: () => [sdk.compactRecord({ a: 1, b: undefined, c: [] }), sdk.compactRecord({ a: 1, b: undefined, c: [], d: [0] }, { dropEmptyArrays: true })],
  mentionedCharacterIds: () => {
    const two = [{ id: "al", name: "Al" }, { id: "li", name: "Li Wei", aliases: ["Li"] }];
    const lian = [{ id: "lian", name: "阿莲", aliases: ["莲"] }];
    const town = [{ id: "lian", name: "莲" }, { id: "town", name: "莲花镇" }];
    return [
      sorted(sdk.mentionedCharacterIds("I also like the harbor", two)),
      sorted(sdk.mentionedCharacterIds("Ask AL, then find Li.", two)),
      sorted(sdk.mentionedCharacterIds("Is this Al's boat?", two)),
      sorted(sdk.mentionedCharacterIds("我想找莲问清楚", lian)),
      sorted(sdk.mentionedCharacterIds("找Dr.陈和阿莲", lian)),
      sorted(sdk.mentionedCharacterIds("明天去莲花镇", town)),
      sorted(sdk.mentionedCharacterIds("带莲去莲花镇", town)),
      sorted(sdk.mentionedCharacterIds("", [{ id: "a", name: "A" }])),
      sorted(sdk.mentionedCharacterIds(undefined, [{ id: "a", name: "A" }])),
      sorted(sdk.mentionedCharacterIds("anything", [{ id: "a" }, { name: "anything" }])),
      sorted(sdk.mentionedCharacterIds("It was spring, during the walk", nodes)),
      sorted(sdk.mentionedCharacterIds("Vice President Shiraishi nodded", nodes)),
      sorted(sdk.mentionedCharacterIds("The President and Vice President Shiraishi", nodes)),
      sorted(sdk.mentionedCharacterIds("我去找副会长", cjk)),
      sorted(sdk.mentionedCharacterIds("会长和副会长", cjk)),
      sorted(sdk.mentionedCharacterIds("副会長に聞く", cjk)),
      sorted(sdk.mentionedCharacterIds("凛と会長", cjk)),
      sdk.mentionedCharacterIds("Rin", nodes) instanceof Set,
    ];
  },
  resolveI18nText: () => {
    const text = { "zh-CN": "你好", "en-US": "Hello", ru: "Привет" };
    return [
      sdk.resolveI18nText(undefined, "en") ?? null,
      sdk.resolveI18nText("plain", "zh-CN"),
      sdk.resolveI18nText(text, "zh-CN"),
      sdk.resolveI18nText(text, "zh"),
      sdk.resolveI18nText(text, "ru-RU"),
      sdk.resolveI18nText(text, "fr"),
      sdk.resolveI18nText(text, undefined),
      sdk.resolveI18nText({ zh: "繁?" , en: "Hi" }, "zh-TW"),
      sdk.resolveI18nText({ fr: "Salut", de: "Hallo" }, "ja"),
      sdk.resolveI18nText({ "en-GB": "Colour" }, "en-US"),
    ];
  },
  resolveI18nDeep: () => [
    sdk.resolveI18nDeep({ name: { zh: "剑", en: "Sword" }, id: "torn-letter", tags: [{ en: "sharp", zh: "锋利" }], meta: { id: "x" } }, "en"),
    sdk.resolveI18nDeep({ id: "torn-letter" }, "en"),
  ],
  isLocaleMap: () => [sdk.isLocaleMap({ "zh-CN": "a", en: "b" }), sdk.isLocaleMap({ id: "torn-letter" }), sdk.isLocaleMap({ name: "x", description: "y" }), sdk.isLocaleMap({}), sdk.isLocaleMap(["en"]), sdk.isLocaleMap({ en: 1 })],
  isKnownLocale: () => [sdk.isKnownLocale("en"), sdk.isKnownLocale("zh-Hant"), sdk.isKnownLocale("backup"), sdk.isKnownLocale("../x")],
  localizedWorldText: () => [
    sdk.localizedWorldText({ name: "雾港", description: "港口", locale: "zh-CN", metadata: { localizedText: { name: { en: "Fog Harbor", zh: "雾港" } } } }, "en"),
    sdk.localizedWorldText({ name: "雾港", description: "港口", locale: "zh-CN", metadata: { localizedText: { name: { en: "Fog Harbor" } } } }, "zh-CN"),
    sdk.localizedWorldText(null, "en"),
    sdk.WORLD_LOCALIZED_TEXT_KEY,
  ],
  canonicalizeLocale: () => [sdk.canonicalizeLocale("ru_ru"), sdk.canonicalizeLocale("zh-hans-cn"), sdk.canonicalizeLocale("../etc") ?? null, sdk.canonicalizeLocale("") ?? null, sdk.canonicalizeLocale("x".repeat(70)) ?? null],
  localeLookupCandidates: () => [sdk.localeLookupCandidates("en-GB"), sdk.localeLookupCandidates("zh-TW"), sdk.localeLookupCandidates("zh-CN"), sdk.localeLookupCandidates("en"), sdk.localeLookupCandidates("a/b")],
  localesShareLanguageAndScript: () => [sdk.localesShareLanguageAndScript("zh-Hant", "zh"), sdk.localesShareLanguageAndScript("en-GB", "en"), sdk.localesShareLanguageAndScript("zh-CN", "zh-Hans"), sdk.localesShareLanguageAndScript("en", "fr")],
  localeRegistry: () => [
    sdk.SUPPORTED_LOCALES,
    sdk.DEFAULT_LOCALE,
    sdk.DEFAULT_FALLBACK_LOCALE,
    sdk.localeRegistry.resolve("zh-Hans")?.code,
    sdk.localeRegistry.match("en-GB")?.code,
    sdk.localeRegistry.match("zh-TW")?.code ?? null,
    sdk.localeRegistry.fallbackLocalesFor("ru"),
    sdk.localeRegistry.fallbackLocalesFor("en-US"),
    sdk.isDefaultLocale("zh"),
    sdk.isDefaultLocale("en"),
    sdk.localeLanguage("en_US"),
    sdk.isLocaleCode("ru_RU"),
    sdk.normalizeLocale(" ZH_cn "),
    thrown(() => sdk.defineLocaleRegistry([{ code: "en-us", label: "x", shortLabel: "x" }], { defaultLocale: "en-us", fallbackLocale: "en-us" })),
  ],
  shortId: () => {
    const a = sdk.shortId("npc", "Lin Yao!", "s1");
    return [/^npc-lin-yao-[0-9a-f]{8}$/.test(a), /^char-[0-9a-f]{8}$/.test(sdk.shortId("char", "林遥", "s1")), sdk.shortIdBatch("npc", ["A", "A"], "s1").length, new Set(sdk.shortIdBatch("npc", ["A", "A"], "s1")).size];
  },
  wordId: () => [sdk.wordId("npc", "Lin Yao", new Set()), sdk.wordId("npc", "Lin Yao", new Set(["npc-lin-yao", "npc-lin-yao-2"])), /^char-[0-9a-f]{8}$/.test(sdk.wordId("char", "林遥", new Set()))],
  wordSlug: () => [sdk.wordSlug("Hello, World 42"), sdk.wordSlug("林遥"), sdk.wordSlug("a".repeat(31) + " bcd")],
  makeProposal: () => {
    const p = sdk.makeProposal(ctx, "2026-01-01T00:00:00.000Z", "plugin.data", { namespace: "n", key: "k", value: 1 });
    return [/^[0-9a-f-]{36}$/.test(p.id), { ...p, id: "" }, sdk.makeProposal({ pluginId: "p", turnId: "t", sessionId: "s" }, "now", "x", {}).source];
  },
  toolResults: () => {
    const p1 = proposal("plugin.data", { namespace: "n", key: "a", value: 1 });
    const p2 = proposal("plugin.data", { namespace: "n", key: "b", value: 2 });
    const ev = [{ topic: "t", data: {} }];
    const withEvents = sdk.withEmittedEvents({ x: 1 }, ev);
    const replaced = sdk.withPendingProposals(sdk.withPendingProposals({ x: 1 }, [p1]), [p2]);
    const kept = sdk.withPendingProposals(withEvents, [p1]);
    return [
      replaced.pendingProposals.map((p) => p.payload.key),
      kept.emittedEvents,
      sdk.getEmittedEvents({ x: 1 }) ?? null,
      sdk.getEmittedEvents(withEvents),
      sdk.getToolContent(kept),
      sdk.getToolContent("plain"),
      sdk.getPendingProposals("plain"),
      sdk.withEmittedEvents(sdk.withPendingProposals({ x: 1 }, [p1]), ev).pendingProposals.length,
      JSON.parse(JSON.stringify(sdk.withModelView(kept, { summary: "s" }))).modelView,
    ];
  },
  overlayPluginData: () => {
    const list = [
      proposal("plugin.data", { namespace: "n", key: "a", value: 1 }),
      proposal("plugin.data.batch", { items: [{ namespace: "n", key: "a", value: 2 }, { namespace: "m", key: "b", value: 3 }] }),
      proposal("plugin.data", { namespace: "n", key: "a", value: 99 }, "other"),
      proposal("plugin.data.delete", { namespace: "m", key: "b" }),
    ];
    return [
      sdk.overlayPluginDataValue(list, "p", "n", "a"),
      sdk.overlayPluginDataValue(list, "p", "m", "b"),
      sdk.overlayPluginDataValue(list, "p", "n", "zzz"),
      [...sdk.overlayPluginDataRows(list, "p").entries()],
      [...sdk.overlayPluginDataRows(list, "p", "n").keys()],
    ];
  },
  narrativeReview: () => {
    const review = sdk.createNarrativeReview("narr");
    const c = { sessionId: "s", turnId: "t", runtimeId: "r", getOwnSettings: () => ({ narrativePerson: "second" }) };
    review.context(c, { pluginId: "narr", characters: [{ name: "Mira", type: "player" }] });
    const prepared = review.prepare(c, { pluginId: "narr", messages: [{ role: "system", content: "rules" }] });
    const other = review.prepare(c, { pluginId: "else", messages: [] });
    const bad = review.review(c, { pluginId: "narr", messages: [], response: { content: "I walk to the door.", toolCalls: [] } });
    const good = review.review(c, { pluginId: "narr", messages: [], response: { content: 'You walk. "I am here," she says.', toolCalls: [] } });
    const lookup = review.review(c, { pluginId: "narr", messages: [], response: { content: "Let me check.", toolCalls: [{ name: "lore-get" }] } });
    review.cleanup(c);
    const after = review.prepare(c, { pluginId: "narr", messages: [] });
    return [
      prepared.replace.stream,
      prepared.replace.messages.length,
      prepared.replace.messages[1].content.startsWith('Player character: "Mira". '),
      other,
      typeof bad.replace.correction,
      good,
      lookup.replace.response.content,
      after.replace.messages[0].content.startsWith("Player character"),
    ];
  },
  outsideDialogue: () => [sdk.outsideDialogue('She said "I go" and left.'), sdk.outsideDialogue("Al's boat; 「我来」她说"), sdk.outsideDialogue('He said "unclosed I')],
  perspectiveError: () => [
    sdk.perspectiveError("You look at her.", "second") ?? null,
    (sdk.perspectiveError("I look at her.", "second") ?? "").startsWith("Narration violates second-person perspective near: I look at her."),
    sdk.perspectiveError('You hear "I am here."', "second") ?? null,
    sdk.perspectiveError("自我介绍之后，你点头。", "second") ?? null,
    typeof sdk.perspectiveError("Mira nods to you.", "third"),
  ],
  compareText: () =>
    [
      ["a", "b"],
      ["b", "a"],
      ["same", "same"],
      ["Zed", "apple"],
      ["\u00e9", "e\u0301"],
      ["\uffff", "\u{1F600}"],
      ["ab", "abc"],
    ].map(([l, r]) => sdk.compareText(l, r)),
  sortedByCompareText: () => ["b", "Zed", "\u{1F600}", "\uffff", "apple"].sort(sdk.compareText),
  appendSummaryEntries: () => {
    const e = (id) => ({ id, kind: "text", label: id, value: id });
    return [
      sdk.appendSummaryEntries(null, [e("a")]),
      sdk.appendSummaryEntries({ entries: [e("a")] }, [e("b")]),
      sdk.appendSummaryEntries({ entries: Array.from({ length: 15 }, (_, i) => e(`p${i}`)) }, [e("x"), e("y")]).entries.map((x) => x.id).slice(-2),
      sdk.appendSummaryEntries({ other: 1 }, []),
    ];
  },
  existingHelpers: () => [
    sdk.seatCharacterIds("s1", [{ id: "c9", seatId: "s1" }], [{ id: "s1", currentCharacterId: "c1" }]),
    typeof sdk.tool,
    typeof sdk.ToolError,
    sdk.zodToJsonSchema(sdk.tool({ name: "t", description: "", parameters: (await_z()).object({ n: (await_z()).number().int().min(1) }), execute: async () => 1 }).parametersSchema),
  ],
};

let zod;
function await_z() {
  return zod;
}

export async function run() {
  zod = (await import("zod")).z;
  const out = {};
  for (const [name, fn] of Object.entries(cases)) {
    try {
      out[name] = { ok: true, value: await fn() };
    } catch (error) {
      out[name] = { ok: false, error: String(error?.stack ?? error) };
    }
  }
  return out;
}

if (process.argv[2] === "run") {
  run().then((out) => process.stdout.write(JSON.stringify(out)));
}
