// Package UI on the play page: refetch the server-drawn panels, or one turn's message blocks, when
// a namespace they watch changes. play.js re-dispatches each stream event as "play:<type>". The
// fragments are our own templates, every package string escaped by the server; nothing here
// builds markup from package data.
(() => {
  "use strict";
  const box = () => document.getElementById("package-ui");
  if (!box()) return;
  const words = (text) => new Set((text || "").split(" ").filter(Boolean));
  const touches = (text, touched) => [...words(text)].some((w) => touched.has(w));

  function swap(target, url) {
    if (window.htmx) window.htmx.ajax("GET", url, { target, swap: "outerHTML" });
  }

  function refreshMessage(turnId) {
    const item = document.querySelector(`#story li[data-turn="${CSS.escape(turnId)}"]`);
    if (!item) return;
    let holder = item.querySelector(".package-ui-message");
    if (!holder) {
      holder = document.createElement("div");
      holder.className = "package-ui-message";
      item.append(holder);
    }
    swap(holder, `${box().dataset.url}?turn=${encodeURIComponent(turnId)}`);
  }

  document.addEventListener("play:plugin-data.changed", (event) => {
    const p = event.detail || {};
    const changes = p.changes || [];
    const touched = new Set(changes.map((c) => `${c.plugin}/${c.namespace}`));
    const current = box();
    if (touches(current.dataset.watch, touched)) swap(current, current.dataset.url);
    const messageWatch = words(current.dataset.messageWatch);
    const turnIds = new Set();
    for (const c of changes) {
      if (!messageWatch.has(`${c.plugin}/${c.namespace}`)) continue;
      if (p.turnId) turnIds.add(String(p.turnId));
      if (c.key) turnIds.add(String(c.key));
    }
    turnIds.forEach(refreshMessage);
  });

  // Blocks drawn per emitted event (a message spec's trigger.event) or per told segment (a
  // segment spec): the turn's blocks again once it commits, when the page shows any such spec.
  document.addEventListener("play:turn.committed", (event) => {
    const p = event.detail || {};
    if (p.turnId && box().dataset.refreshOnCommit === "true") refreshMessage(String(p.turnId));
  });
})();
