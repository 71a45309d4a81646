// ctx.store: what a handler, tool, guard, service or RPC action may read of its session through
// Python (its own plugin data, the session, the turn messages). One function, makeStore(call),
// kept here on its own so that new store methods have one obvious place.
import { toPython } from "./framing.mjs";

export function makeStore(call) {
  return {
    async getPluginData(namespace, key) {
      const value = await toPython(call, "pluginData.get", { namespace: String(namespace), key: String(key) });
      return value === null || value === undefined ? null : { key: String(key), value };
    },
    async listPluginData(namespace) {
      return toPython(call, "pluginData.list", { namespace: String(namespace) });
    },
    async getSession() {
      return toPython(call, "store.getSession", {});
    },
    // Bundled (trusted) packages only, as in Covel; Python refuses community code by name.
    async getWorld(worldId) {
      return toPython(call, "store.getWorld", { worldId: worldId === undefined || worldId === null ? null : String(worldId) });
    },
    async listCharacters() {
      return toPython(call, "store.listCharacters", {});
    },
    async getCharacter(characterId) {
      return toPython(call, "store.getCharacter", { characterId: String(characterId) });
    },
    async listPlayerInputs() {
      return toPython(call, "store.listPlayerInputs", {});
    },
    async readTurnMessages(options = {}) {
      const limit = Math.min(Math.max(Number(options.limit ?? 100) || 100, 1), 500);
      return toPython(call, "store.readTurnMessages", { after: options.after ?? null, limit });
    },
    async listTurnMessages(limit) {
      const page = await toPython(call, "store.readTurnMessages", { after: null, limit: Math.min(Number(limit ?? 500) || 500, 500) });
      return page.messages ?? [];
    },
  };
}
