/**
 * Unified server entry (PLUGIN.md `entry`): the status panel's UI slot. The host asks it for
 * the session.summary@1 value whenever the page needs the slot (first load, and each change
 * of the watched `status` namespace); it reads this package's committed status only.
 */

export default function (covel) {
  covel.provideExtension("ui.slot@1", "status", {
    async handler(input, ctx) {
      const row = await ctx.pluginData.get("status", "current");
      const status = row?.value;
      if (!status) return input.previous;
      // A last action that says "glitch" makes the provider fail, so the page's error note
      // can be seen.
      if (/glitch/i.test(status.lastAction)) throw new Error("the status panel glitched");
      const own = [
        { id: "turn", label: { en: "Turn", fr: "Tour" }, kind: "text", value: String(status.turn) },
        { id: "last-action", label: "Last action", kind: "text", value: status.lastAction },
        { id: "stamina", label: "Stamina", kind: "meter", value: status.stamina, min: 0, max: 10, tone: status.stamina <= 3 ? "danger" : "info" },
      ];
      // preview: a status.alert of the running turn shows before the turn commits.
      const alert = input.events.findLast((e) => e.topic === "status.alert" && e.pluginId === ctx.pluginId);
      if (alert) own.push({ id: "alert", label: "Alert", kind: "text", value: `Stamina ${alert.data.stamina}: rest soon`, tone: "warning" });
      // Pipeline: entries of the providers before this one stay first.
      return { entries: [...(input.previous?.entries ?? []), ...own] };
    },
  });
}
