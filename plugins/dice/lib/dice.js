// Dice notation and rolling shared by the tool, the /roll action and the manual runtime.

export const MAX_DICE = 20;
export const MIN_SIDES = 2;
export const MAX_SIDES = 100;
export const MAX_MODIFIER = 100;

const DIE = /^d(\d+)([+-]\d+)?$/i; // limits are checked by checkRequest, not here

/** Parse the words after the count of "/roll": an optional "dN[+M]" then a free label. */
export function parseExpression(text, defaultSides) {
  const words = String(text ?? "").trim().split(/\s+/).filter(Boolean);
  let sides = defaultSides;
  let modifier = 0;
  const match = words.length > 0 ? DIE.exec(words[0]) : null;
  if (match) {
    sides = Number(match[1]);
    modifier = match[2] ? Number(match[2]) : 0;
    words.shift();
  }
  return { sides, modifier, label: words.join(" ").slice(0, 80) };
}

/** Return an error message for a request outside the limits, or null when it is valid. */
export function checkRequest({ count, sides, modifier }) {
  if (!Number.isInteger(count) || count < 1 || count > MAX_DICE) return `count must be an integer from 1 to ${MAX_DICE}`;
  if (!Number.isInteger(sides) || sides < MIN_SIDES || sides > MAX_SIDES) {
    return `sides must be an integer from ${MIN_SIDES} to ${MAX_SIDES}`;
  }
  if (!Number.isInteger(modifier) || Math.abs(modifier) > MAX_MODIFIER) {
    return `modifier must be an integer from -${MAX_MODIFIER} to ${MAX_MODIFIER}`;
  }
  return null;
}

function face(draw, sides) {
  return Math.min(sides, 1 + Math.floor(draw() * sides));
}

/**
 * Roll count dice of the given sides with draw(), a function returning [0, 1).
 * With advantage a single die is rolled twice and the higher face kept.
 */
export function roll({ count, sides, modifier = 0, advantage = false, label = "" }, draw) {
  const dice = [];
  let discarded = null;
  for (let i = 0; i < count; i += 1) dice.push(face(draw, sides));
  if (advantage && count === 1) {
    const second = face(draw, sides);
    discarded = Math.min(dice[0], second);
    dice[0] = Math.max(dice[0], second);
  }
  const total = dice.reduce((sum, value) => sum + value, 0) + modifier;
  const sign = modifier > 0 ? `+${modifier}` : modifier < 0 ? String(modifier) : "";
  return {
    notation: `${count}d${sides}${sign}`,
    dice,
    modifier,
    total,
    advantage: Boolean(advantage && count === 1),
    ...(discarded === null ? {} : { discarded }),
    ...(label ? { label } : {}),
  };
}
