import makeSaveNote from "../tools/save-note.js";

const NOTE_ID = /^[a-z0-9]+(-[a-z0-9]+)*$/;

export default function register(covel) {
  covel.registerTool(makeSaveNote(covel.toolkit));

  // /note [id]: the payload comes from a player or a UI, so it is checked before use.
  covel.registerRpc("inspect-note", async (payload, ctx) => {
    const args = ctx.command?.args ?? (payload && typeof payload === "object" ? payload : {});
    const wanted = args.id === "" || args.id === null ? undefined : args.id;
    if (wanted !== undefined && (typeof wanted !== "string" || !NOTE_ID.test(wanted))) {
      return { ok: false, error: "id must be a kebab-case note key, such as gate-is-locked" };
    }
    const rows = await ctx.store.listPluginData("notes");
    const notes = rows
      .map((row) => row.value)
      .filter((note) => note && typeof note.text === "string")
      .filter((note) => wanted === undefined || note.id === wanted)
      .sort((a, b) => String(a.id).localeCompare(String(b.id)));
    return { ok: true, data: notes };
  });
}
