import { MAX_DICE, MAX_MODIFIER, MAX_SIDES, MIN_SIDES, roll } from "../lib/dice.js";

export default function makeRollDice({ tool, z, withModelView, ToolError }) {
  return tool({
    name: "roll-dice",
    description: "Roll dice for an uncertain action and report every face and the total.",
    // A roll writes nothing, but it must not be repeated to get a better result.
    annotations: { readOnly: true },
    parameters: z.object({
      count: z.number().int().min(1).max(MAX_DICE).describe("Number of dice"),
      sides: z.number().int().min(MIN_SIDES).max(MAX_SIDES).describe("Sides of each die"),
      modifier: z.number().int().min(-MAX_MODIFIER).max(MAX_MODIFIER).default(0).describe("Added to the total"),
      label: z.string().max(80).optional().describe("What the roll is for"),
    }),
    async execute(params, context) {
      if (typeof context.random !== "function") {
        // Dice must come from the turn's seeded randomness, never Math.random.
        throw new ToolError("no-randomness", "This host gave the tool no seeded randomness.", {
          hint: "Run the tool inside a Covel turn.",
        });
      }
      const result = roll({ ...params, label: params.label ?? "" }, () => context.random());
      return withModelView(result, { summary: `${result.notation}: [${result.dice.join(", ")}] = ${result.total}` });
    },
  });
}
