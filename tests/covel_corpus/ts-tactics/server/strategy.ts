export type Stance = "press" | "hold" | "scout";

export interface Tactic {
  readonly stance: Stance;
  readonly reason: string;
  readonly turn: number;
}

const WORDS: ReadonlyArray<readonly [Stance, RegExp]> = [
  ["press", /\b(attack|charge|strike)\b/i],
  ["hold", /\b(defend|wait|guard)\b/i],
];

/** The stance a message asks for; scouting when it names none. */
export function chooseTactic(message: string, turn: number): Tactic {
  for (const [stance, pattern] of WORDS) {
    if (pattern.test(message)) return { stance, reason: `the move reads as "${stance}"`, turn };
  }
  return { stance: "scout", reason: "no stance was named", turn };
}
