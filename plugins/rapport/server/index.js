import makeAdjustAffinity from "../tools/adjust-affinity.js";

export default function register(covel) {
  covel.registerTool(makeAdjustAffinity(covel.toolkit));
}
