// A welcome naming the world, read through ctx.store as Covel's pregame reads it.
async function attempt(read) {
  try {
    return { ok: true, value: await read() };
  } catch (error) {
    return { ok: false, code: error?.code ?? null, message: String(error?.message ?? error) };
  }
}

export default async function handler(ctx) {
  const session = await ctx.store.getSession();
  const world = await attempt(() => ctx.store.getWorld(session.worldId));
  const other = await attempt(() => ctx.store.getWorld("some-other-world"));
  const cast = await attempt(() => ctx.store.listCharacters());
  const mira = await attempt(() => ctx.store.getCharacter("mira"));
  const inputs = await attempt(() => ctx.store.listPlayerInputs());
  const name = world.ok && world.value?.name ? world.value.name : "Unknown World";
  await ctx.pluginData.set("greeting", "welcome", {
    line: `Welcome to ${name}. This is turn ${session.turnCount + 1}.`,
    session,
    world,
    otherWorld: other,
    characters: cast.ok ? cast.value.map((c) => c.id) : cast,
    mira: mira.ok ? mira.value?.name ?? null : mira,
    inputs,
  });
  return { outcome: "success", value: { name } };
}
