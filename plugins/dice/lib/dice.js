// Dice notation and rolling shared by the tool, the /roll action and the manual runtime.

export const MAX_DICE = 20;
export const MIN_SIDES = 2;
export const MAX_SIDES = 100;
export const MAX_MODIFIER = 100;

const NOTATION = /^(\d*)(?:d(\d+))?([+-]\d+)?$/i;

/**
 * Parse dice notation as players write it: "2d6+1", "d20", "3d8-1", a bare count "4" (of the
 * default die) or nothing (one default die). Returns {count, sides, modifier}, or null when the
 * text is not notation (limits are checked by checkRequest).
 */
export function parseNotation(text, defaultSides) {
  const written = String(text ?? "").trim().replace(/\s+/g, "");
  if (!written) return { count: 1, sides: defaultSides, modifier: 0 };
  const match = NOTATION.exec(written);
  if (!match || (!match[1] && !match[2])) return null;
  return {
    count: match[1] ? Number(match[1]) : 1,
    sides: match[2] ? Number(match[2]) : defaultSides,
    modifier: match[3] ? Number(match[3]) : 0,
  };
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
