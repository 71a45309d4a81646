// narrative-engine@1 from the hub's narrator: the same story, under Covel's v1 field.
export default async function handler(ctx) {
  const story = ctx.inputs?.story?.value;
  const fromNarrator = story && typeof story === "object" ? story.narrativeOutput : undefined;
  const text = typeof fromNarrator === "string" ? fromNarrator : String(ctx.inputs?.turn?.value?.narrativeText ?? "");
  return { outcome: "success", value: { narrativeOutput: text } };
}
