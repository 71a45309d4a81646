// Scores of the characters this turn's WorldIR names, moved by the player's words.
const WARM = /\b(thank|thanks|help|gift|praise)\b/i;
const HARSH = /\b(insult|threaten|hit|mock)\b/i;
const TIERS = [
  { min: 40, label: { zh: "亲密", en: "Close" }, color: "green" },
  { min: 10, label: { zh: "友好", en: "Friendly" }, color: "blue" },
  { min: -10, label: { zh: "中立", en: "Neutral" }, color: "gray" },
  { min: -100, label: { zh: "敌视", en: "Hostile" }, color: "red" },
];

const tierOf = (score) => TIERS.find((t) => score >= t.min);

export default async function handler(ctx) {
  const facts = ctx.inputs?.worldIR?.value ?? {};
  const people = (facts.entities ?? []).filter((e) => e.type === "character");
  if (people.length === 0) return { outcome: "success", value: { changed: 0 } };
  const said = String(ctx.inputs?.turn?.value?.playerMessage ?? ctx.playerMessage ?? "");
  const delta = WARM.test(said) ? 10 : HARSH.test(said) ? -15 : 2;
  const reason = WARM.test(said) ? "kindness" : HARSH.test(said) ? "harshness" : "time together";
  const turnId = String(ctx.execution?.sourceTurnId ?? ctx.turnId);
  const changes = [];
  for (const person of people) {
    const before = (await ctx.pluginData.get("affinity", person.id)) ?? { score: 0 };
    const score = Math.max(-100, Math.min(100, before.score + delta));
    const tier = tierOf(score);
    const deltaText = delta > 0 ? `+${delta}` : String(delta);
    const deltaColor = delta > 0 ? "green" : "red";
    await ctx.pluginData.set("affinity", person.id, {
      name: person.name ?? person.id,
      score,
      scoreBar: score + 100,
      tierLabel: tier.label,
      tierColor: tier.color,
      lastDelta: deltaText,
      lastDeltaColor: deltaColor,
      lastReason: reason,
    });
    changes.push({ id: person.id, name: person.name ?? person.id, deltaText, deltaColor, tierLabel: tier.label, tierColor: tier.color, reason });
  }
  // The story it read through narrative-engine@1 (select /narrativeOutput), kept for the tests.
  const story = ctx.inputs?.narrative?.value;
  const storyChars = typeof story === "string" ? story.length : -1;
  await ctx.pluginData.set("message", turnId, { __turnId: turnId, changes, storyChars });
  return { outcome: "success", value: { changed: changes.length } };
}
