import type { PluginFunctionHandler } from "@covel/plugin-handlers-utils";
import { chooseTactic, type Tactic } from "./strategy.js";

const handler: PluginFunctionHandler = async (ctx) => {
  const tactic: Tactic = chooseTactic(String(ctx.playerMessage ?? ""), ctx.logicalTurn);
  return {
    outcome: "success",
    value: { stance: tactic.stance },
    effects: {
      pluginData: [
        { namespace: "tactics", key: "last", value: tactic },
        { namespace: "tactics", key: `turn-${tactic.turn}`, value: tactic.stance },
      ],
      notifications: [{ level: "success", title: "Tactic chosen", message: `${tactic.stance}: ${tactic.reason}` }],
    },
  };
};

export default handler;
