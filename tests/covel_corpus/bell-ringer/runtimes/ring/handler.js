export default async function ring(ctx) {
  const said = String(ctx.inputs?.turn?.value?.playerMessage ?? "");
  const { times } = await ctx.tools.call("count-rings", { text: said });
  if (times === 0) return { outcome: "success", value: { rang: 0 } };
  return {
    outcome: "success",
    value: { rang: times },
    effects: { events: [{ topic: "bell.rang", data: { times, bell: "harbour" } }] },
  };
}
