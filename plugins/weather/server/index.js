import { reportFor } from "../lib/almanac.js";

export default function register(covel) {
  const { z } = covel.toolkit;
  covel.registerService({
    name: "weather-report",
    contract: "weather-report@1",
    access: "read",
    modelFacing: true,
    description: "Current weather of a city in the story world: sky, temperature in °C and wind.",
    input: z.object({
      city: z.string().trim().min(1).max(60).describe("City name, for example Saltmere"),
    }),
    output: z.object({
      city: z.string(),
      sky: z.string(),
      temperatureC: z.number(),
      wind: z.string(),
      known: z.boolean(),
      summary: z.string(),
    }),
    handler: (input) => reportFor(input.city),
  });
}
