import { briefOf, sceneProblems } from "../lib/scene.js";
import { guardSceneWrites, noteTurnStart } from "../hooks/commit-guard.js";

// A tiny offline image wire: it draws the scene's place name as an SVG card.
function escapeXml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" })[c]);
}

const sceneWire = {
  id: "scene-wire",
  async generate(_config, params) {
    const title = escapeXml(String(params?.prompt ?? "A scene").slice(0, 60));
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="512" height="256"><rect width="100%" height="100%" fill="#1d2b3a"/><text x="24" y="136" font-family="serif" font-size="28" fill="#f4e9d8">${title}</text></svg>`;
    return { images: [{ kind: "bytes", bytes: new TextEncoder().encode(svg), mime: "image/svg+xml" }], usage: null, warnings: [] };
  },
};

export default function register(covel) {
  covel.registerHook("TurnStart", async () => noteTurnStart());
  covel.registerHook("PreStateCommit", async (ctx, payload) => guardSceneWrites(ctx, payload), { enforce: "pre" });

  // Synchronous and free of effects, as form validators must be.
  covel.registerFormValidator("scene-form", (values, _data, context) => {
    const problems = sceneProblems(values).map((p) => ({
      field: p.field,
      message: context?.messages?.translations?.[p.message] ?? p.message,
    }));
    return problems.length > 0 ? problems : undefined;
  });

  covel.registerWire("scene-wire", sceneWire);

  covel.provideExtension("prompt.segment@1", "scene-brief", {
    async handler(_input, ctx) {
      const scene = await ctx.pluginData?.get("scene", "current");
      const content = briefOf(scene?.value ?? scene);
      // audience and volatility are required by prompt.segment@1: every agent reads the
      // scene, and it may change every turn.
      return content ? [{ id: "scene-brief", content, position: "system", audience: "all", volatility: "turn" }] : [];
    },
  });
}
