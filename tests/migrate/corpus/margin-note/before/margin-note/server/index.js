// The hook is registered in code only; the manifest (covel-plugins format) never declares it.
import { hint } from "./hint.js";

export default function register(covel) {
  // covel.on("TurnStop", ...) is only mentioned in this comment, never registered.
  covel.on("PostContextAssembly", async (ctx, payload) => {
    return { action: "continue", appendSystem: hint(ctx?.locale) };
  });
}
