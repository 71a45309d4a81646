// Rolls four fate dice (-1, 0, +1 each) and returns the pool.
export default async function roll(ctx) {
  const dice = [0, 1, 2, 3].map(() => ctx.random.int(-1, 2));
  return { dice, total: dice.reduce((a, b) => a + b, 0) };
}
