import { POOL_SIZE, checkContext, rememberPool } from "../../lib/pool.js";

export default async function roller(ctx) {
  const dice = [];
  for (let i = 0; i < POOL_SIZE; i += 1) dice.push(1 + Math.floor(ctx.random() * 20));
  // The guard hook reads the pool of this turn from the same module, as Covel's dice-check does.
  rememberPool(ctx.sessionId, ctx.turnId, dice);
  return { outcome: "success", value: { checkContext: checkContext(dice), dice } };
}
