// Narration review helpers of `@covel/plugin-handlers-utils`: find narration outside quoted
// speech, check its grammatical person, and a set of hook handlers a narrator package can
// register to ask for and enforce that person. Behaviour as Covel's SDK; the code is ours.

const CLOSERS = { "“": "”", "‘": "’", "「": "」", "『": "』", "«": "»", '"': '"', "'": "'" };
const LETTER = /\p{L}/u;

/** The text with every closed quotation replaced by a space; an unclosed one is kept from its opener on. */
export function outsideDialogue(text) {
  const open = [];
  let narration = "";
  let unclosedFrom = -1;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    const prev = text[i - 1] ?? "";
    const next = text[i + 1] ?? "";
    // don't, Al's: an apostrophe between letters neither opens nor closes speech.
    const apostrophe = ch === "'" && LETTER.test(prev) && LETTER.test(next);
    if (!apostrophe && open.length && ch === open[open.length - 1]) {
      open.pop();
      narration += " ";
      if (!open.length) unclosedFrom = -1;
    } else if (!apostrophe && CLOSERS[ch] && (ch !== "'" || !LETTER.test(prev))) {
      if (!open.length) unclosedFrom = i;
      open.push(CLOSERS[ch]);
    } else if (!open.length) {
      narration += ch;
    }
  }
  return unclosedFrom >= 0 ? narration + text.slice(unclosedFrom) : narration;
}

const FORBIDDEN = {
  first: /[你妳您]|\b(?:you|your|yours|yourself|yourselves)\b/iu,
  second: /我|\b(?:I|me|my|mine|myself)\b/iu,
  third: /[我你妳您]|\b(?:I|me|my|mine|myself|we|us|our|ours|you|your|yours)\b/iu,
};
// Chinese words that contain 我 or 你 without being a pronoun.
const IDIOMS = /自我|忘我|无我|你来我往|尔虞我诈|迷你/g;

/** Why the narration breaks the person ("first" | "second" | "third"), or undefined. */
export function perspectiveError(text, person) {
  const narration = outsideDialogue(text).replace(IDIOMS, "");
  const pattern = FORBIDDEN[person === "first" || person === "third" ? person : "second"];
  const match = narration.match(pattern);
  if (!match) return undefined;
  const from = Math.max(0, (match.index ?? 0) - 18);
  return `Narration violates ${person}-person perspective near: ${narration.slice(from, from + 65)}. Fix narration only; keep quoted speakers' pronouns.`;
}

// The instruction text is the hub's own wording of the same three rules.
const INSTRUCTIONS = {
  first: {
    zh: "用玩家角色自己的口吻（我、我的）叙述；这里的“我”是玩家角色，不是助手，也不是作者。",
    en: "Tell the story through the player character's own eyes in the first person (I, me, my); that I is the character, not the assistant or the author.",
  },
  second: {
    zh: "用第二人称（你、你的）称呼玩家角色来叙述。",
    en: "Tell the story addressing the player character in the second person (you, your).",
  },
  third: {
    zh: "用玩家角色的名字和第三人称代词叙述，只写该角色能感知的内容，不要把玩家称作“我”或“你”。",
    en: "Tell the story naming the player character and using third-person pronouns, limited to what that character perceives; never call the player I or you.",
  },
};
const RULES_TAIL = {
  zh: " 引号里的对白保留说话人自己的人称。不要复述玩家的输入，也不要替玩家决定行动或想法。需要查资料时直接调用工具，不写准备说明；工具返回后直接写场景。",
  en: " Quoted speech keeps its speaker's own pronouns. Do not repeat the player's input or decide the player's actions or thoughts. When you need facts, call the tools without announcing it; once they answer, write the scene itself.",
};
const INTERNAL_TAGS = /<\/?(?:system|system_warning|analysis|thinking|runtime-inputs|available-events)\b/i;

function personOf(ctx) {
  const chosen = ctx?.getOwnSettings?.()?.narrativePerson;
  return chosen === "first" || chosen === "third" ? chosen : "second";
}

/**
 * Hook handlers for the narrator package `pluginId`: `context` remembers the player character
 * (PostContextAssembly), `prepare` appends the person instruction and turns streaming off
 * (PreLLMCall), `review` asks for a correction (PostLLMResponse), `cleanup` forgets the turn.
 */
export function createNarrativeReview(pluginId) {
  const players = new Map();
  const keyOf = (ctx) => `${ctx.sessionId}\0${ctx.turnId}\0${ctx.runtimeId}`;
  const pass = () => ({ action: "continue" });
  return {
    context(ctx, payload) {
      if (payload?.pluginId === pluginId) {
        const player = payload.characters?.find((character) => character.type === "player");
        if (player) players.set(keyOf(ctx), player.name);
      }
      return pass();
    },
    cleanup(ctx) {
      const prefix = `${ctx.sessionId}\0${ctx.turnId}\0`;
      for (const key of [...players.keys()]) if (key.startsWith(prefix)) players.delete(key);
      return pass();
    },
    prepare(ctx, payload) {
      if (payload?.pluginId !== pluginId) return pass();
      const chinese = payload.messages.some((m) => m.role === "system" && typeof m.content === "string" && /输出要求|叙事规则/.test(m.content));
      const language = chinese ? "zh" : "en";
      const player = players.get(keyOf(ctx));
      const content = (player ? `Player character: ${JSON.stringify(player)}. ` : "") + INSTRUCTIONS[personOf(ctx)][language] + RULES_TAIL[language];
      return { action: "continue", replace: { stream: false, messages: [...payload.messages, { role: "system", content }] } };
    },
    review(ctx, payload) {
      if (payload?.pluginId !== pluginId) return pass();
      const response = payload.response;
      // Prose written before a lookup is not the story and must not seed the answer.
      if (response.toolCalls.some((call) => call.name !== "runtime-done")) {
        return { action: "continue", replace: { response: { ...response, content: null } } };
      }
      const text = response.content ?? "";
      let correction = payload.correction;
      if (!correction) {
        correction = !text.trim()
          ? "Now write the scene itself from the facts you looked up; a turn cannot end with a tool call alone."
          : [INTERNAL_TAGS.test(text) ? "Write only the story as it happens in the world, without internal tags or notes about the writing." : undefined, perspectiveError(text, personOf(ctx))]
              .filter(Boolean)
              .join("\n");
      }
      return correction ? { action: "continue", replace: { correction } } : pass();
    },
  };
}
