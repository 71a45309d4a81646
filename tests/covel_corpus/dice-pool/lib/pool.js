// The dice pool of a turn and the rules that read it, shared by the roller, the hooks and the
// recorder.

export const POOL_SIZE = 3;

const pools = new Map(); // "<sessionId>:<turnId>" -> dice
const accepted = new Map(); // sessionId -> turnIds whose receipt emit-event recorded

export function rememberPool(sessionId, turnId, dice) {
  pools.set(`${sessionId}:${turnId}`, dice);
}

export function poolOf(sessionId, turnId) {
  return pools.get(`${sessionId}:${turnId}`) ?? null;
}

export function acceptReceipt(sessionId, turnId) {
  const list = accepted.get(sessionId) ?? [];
  list.push(turnId);
  accepted.set(sessionId, list);
}

export function acceptedReceipts(sessionId) {
  return accepted.get(sessionId) ?? [];
}

/** total = die + modifier against dc; a natural 20 or 1 decides alone. */
export function outcomeOf(roll, modifier, dc) {
  if (roll === 20) return "critical-success";
  if (roll === 1) return "critical-failure";
  return roll + modifier >= dc ? "success" : "failure";
}

export function checkContext(dice) {
  const lines = dice.map((die, index) => `#${index + 1}: d20 = ${die}`);
  return [
    "Dice pool of this turn (use in order, one die per risky action):",
    ...lines,
    "Rules: total = die + modifier against dc; total >= dc is success, else failure;",
    "a natural 20 is critical-success and a natural 1 is critical-failure.",
    "Report every check of the turn once with check.resolved: {checks: [{action, roll, modifier, dc, total, outcome}]}.",
  ].join("\n");
}
