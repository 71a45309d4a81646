// The play page: send actions, follow the session's server-sent events, update the story,
// the runtime statuses and the plugin data panel. Plugin text is untrusted: only textContent.
(() => {
  "use strict";
  const root = document.getElementById("play");
  if (!root) return;
  const story = document.getElementById("story");
  const runtimes = document.getElementById("runtimes");
  const dataBody = document.querySelector("#plugin-data tbody");
  const composer = document.getElementById("composer");
  const state = document.getElementById("composer-state");
  const commandResult = document.getElementById("command-result");
  const turns = document.getElementById("session-turns");
  const phase = document.getElementById("session-phase");
  const asks = document.getElementById("asks");
  const formsBox = document.getElementById("forms");
  const notices = document.getElementById("notifications");
  const storyLive = document.getElementById("story-live");
  const turnTools = document.getElementById("turn-tools");
  const commandMenu = document.getElementById("command-menu");
  const commandList = document.getElementById("command-list");
  const words = root.dataset; // translated words the template hands over (data-t-*)
  const say = (name, fallback) => words[name] || fallback;

  function csrfToken() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (error) {
      return "";
    }
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function turnItem(turnId) {
    let item = story.querySelector(`li[data-turn="${CSS.escape(turnId)}"]`);
    if (!item) {
      story.querySelector(".story-empty")?.remove();
      item = el("li", "turn");
      item.dataset.turn = turnId;
      item.append(el("p", "player-line"), el("p", "narrative"));
      story.append(item);
    }
    return item;
  }

  // A form's answer runs as a turn whose message the server writes ("[Player input] <title>:
  // ..."); the story shows it as the answer it is, like the page does after a reload.
  const ANSWER = /^\[Player input\] ([^:]*):/;
  function showPlayerLine(item, message) {
    const line = item.querySelector(".player-line, .answer-line");
    const answer = ANSWER.exec(String(message || ""));
    if (answer) {
      line.className = "answer-line";
      line.textContent = say("tAnswered", "You answered “{form}”.").replace("{form}", answer[1]);
    } else {
      line.className = "player-line";
      line.textContent = message;
    }
  }

  // Players read yes/no, never true/false.
  function plain(value) {
    if (value === true) return say("tYes", "yes");
    if (value === false) return say("tNo", "no");
    return value;
  }

  // A runtime that only lacks a configured model slot is a setup note for staff, not a failure.
  function neededSlot(result) {
    if (result.code !== "no-model-configured") return "";
    const match = /the '([^']+)' slot|slot '([^']+)'/.exec(String(result.reason || ""));
    if (match) return match[1] || match[2];
    return "?";
  }

  function showRuntime(result) {
    runtimes.querySelector(".empty")?.remove();
    let item = runtimes.querySelector(`li[data-runtime="${CSS.escape(result.runtime)}"]`);
    if (!item) {
      item = el("li");
      item.dataset.runtime = result.runtime;
      runtimes.append(item);
    }
    item.dataset.code = result.code || "";
    const slot = neededSlot(result);
    if (slot) {
      item.className = "runtime status-needs-model";
      item.replaceChildren(el("code", "", result.runtime), document.createTextNode(" "), el("span", "status", "needs a model"),
        document.createTextNode(" "), el("span", "reason", `staff: set slot ${slot}`));
      return;
    }
    item.className = `runtime status-${result.status}`;
    item.replaceChildren(el("code", "", result.runtime), document.createTextNode(" "), el("span", "status", result.status));
    if (result.code) item.append(document.createTextNode(" "), el("span", "code", result.code));
    if (result.reason) item.append(el("span", "reason", result.reason));
  }

  // A JSON value for people: objects and arrays fold into a summary line and indented JSON.
  function valueNode(value) {
    const compact = JSON.stringify(value);
    if (value === null || typeof value !== "object") return el("code", "", compact);
    const details = el("details");
    const summary = el("summary");
    summary.append(el("code", "", compact.length > 60 ? `${compact.slice(0, 59)}…` : compact));
    const pre = el("pre", "", JSON.stringify(value, null, 2));
    pre.tabIndex = 0; // a scrolling box is reachable from the keyboard
    details.append(summary, pre);
    return details;
  }

  // A command's answer: its `message` as text, the rest of its data folded under it; without
  // a message, text, a list, or field/value pairs, never as raw JSON.
  function commandNode(value) {
    if (value && typeof value === "object" && !Array.isArray(value) && typeof value.message === "string") {
      const { message, ...rest } = value;
      const box = el("div");
      // Covel's action answer, {ok, message, data}: the message is what the player reads.
      box.append(el("p", value.ok === false ? "error-text" : "message", message));
      if (Object.keys(rest).length) {
        const details = el("details", "command-data");
        details.append(el("summary", "", say("tDetails", "Details")), commandFields(rest));
        box.append(details);
      }
      return box;
    }
    if (value === null || value === undefined) return el("p", "muted", say("tDone", "Done."));
    if (typeof value !== "object") return el("p", "", plain(value));
    if (Array.isArray(value)) {
      const list = el("ul");
      for (const item of value) {
        const li = el("li");
        li.append(typeof item === "object" && item !== null ? valueNode(item) : document.createTextNode(String(item)));
        list.append(li);
      }
      return list;
    }
    return commandFields(value);
  }

  function commandFields(value) {
    const fields = el("dl");
    for (const [key, item] of Object.entries(value)) {
      const dd = el("dd");
      if (Array.isArray(item) && item.every((x) => x === null || typeof x !== "object")) dd.textContent = item.join(", ");
      else if (item !== null && typeof item === "object") dd.append(valueNode(item));
      else dd.textContent = String(plain(item));
      fields.append(el("dt", "", key), dd);
    }
    return fields;
  }

  function showCommandResult(node) {
    commandResult.querySelector(".command-output").replaceChildren(node);
    commandResult.hidden = false;
  }

  function clearCommandResult() {
    if (!commandResult) return;
    commandResult.hidden = true;
    commandResult.querySelector(".command-output").replaceChildren();
  }

  commandResult?.querySelector("[data-close]")?.addEventListener("click", clearCommandResult);

  // A plugin-data.changed event names the keys that changed, never their values (a value may be
  // 256 KB): the panel fetches the keys it shows, at most a page of them per event.
  const dataTable = document.getElementById("plugin-data");
  const DATA_FETCHES_PER_EVENT = 50;
  const DATA_VALUE_CHARS = 2000; // as the server cuts a long value (sessions/views.py)

  async function fetchData(change) {
    const query = new URLSearchParams({ plugin: change.plugin, namespace: change.namespace, key: change.key, limit: "1" });
    const response = await fetch(`${dataTable.dataset.url}?${query}`, { credentials: "same-origin" });
    if (!response.ok) return;
    const page = await response.json();
    if (page.items.length) showData({ ...page.items[0], deleted: false });
    else showData({ ...change, deleted: true });
  }

  function dataChanged(changes) {
    if (!dataTable) return;
    const shown = new Set([...dataBody.rows].map((r) => r.dataset.key));
    const lastPage = dataTable.hasAttribute("data-last-page");
    let fetches = 0;
    for (const change of changes || []) {
      const key = `${change.plugin}/${change.namespace}/${change.key}`;
      if (change.deleted) {
        showData(change);
      } else if ((shown.has(key) || lastPage) && fetches < DATA_FETCHES_PER_EVENT) {
        fetches += 1;
        fetchData(change);
      }
    }
  }

  function showData(change) {
    const key = `${change.plugin}/${change.namespace}/${change.key}`;
    let row = [...dataBody.rows].find((r) => r.dataset.key === key);
    if (change.deleted) {
      row?.remove();
      return;
    }
    if (!row) {
      dataBody.querySelector(".empty")?.remove();
      row = dataBody.insertRow();
      row.dataset.key = key;
      for (let i = 0; i < 4; i += 1) row.insertCell();
    }
    row.cells[0].textContent = change.plugin;
    row.cells[1].textContent = change.namespace;
    row.cells[2].textContent = change.key;
    row.cells[3].className = "value";
    const text = JSON.stringify(change.value);
    row.cells[3].replaceChildren(
      text.length > DATA_VALUE_CHARS ? el("code", "", `${text.slice(0, DATA_VALUE_CHARS)}… (${change.size} bytes)`) : valueNode(change.value),
    );
    row.classList.add("changed");
    setTimeout(() => row.classList.remove("changed"), 1500);
  }

  // ---------------------------------------------------------------- UI slots (ui.slot@1)

  const slotsBox = document.getElementById("ui-slots");

  function slotEntry(entry) {
    const item = el("li", `slot-entry kind-${String(entry.kind).replace(/[^a-z]/g, "")}`);
    if (entry.tone) item.classList.add(`tone-${String(entry.tone).replace(/[^a-z]/g, "")}`);
    item.dataset.entry = entry.id;
    item.append(el("span", "label", entry.label), " ");
    if (entry.kind === "meter") {
      const meter = el("meter");
      meter.min = Number(entry.min ?? 0);
      meter.max = Number(entry.max);
      meter.value = Number(entry.value);
      item.append(meter, " ", el("span", "value", `${entry.value} / ${entry.max}`));
    } else if (entry.kind === "list") {
      const items = el("ul", "items");
      for (const text of entry.items || []) items.append(el("li", "", text));
      item.append(items);
    } else {
      item.append(el("span", "value", plain(entry.value)));
    }
    return item;
  }

  // Slot values are plugin output: every string goes in as textContent, never as markup.
  function showSlot(slot) {
    const section = [...slotsBox.querySelectorAll(".ui-slot")].find((s) => s.dataset.slot === slot.slot);
    if (!section) return;
    section.dataset.watch = (slot.watch || []).join(" ");
    section.dataset.preview = (slot.preview || []).join(" ");
    const list = section.querySelector(".slot-entries");
    const entries = (slot.entries || []).map(slotEntry);
    list.replaceChildren(...(entries.length ? entries : [el("li", "muted empty", "Nothing to show yet.")]));
    section.querySelectorAll(".slot-error").forEach((node) => node.remove());
    for (const f of slot.failures || []) {
      const note = el("p", "slot-error", `${f.plugin}/${f.extension} could not be shown [${f.code}]: ${f.message}`);
      note.dataset.code = f.code;
      section.append(note);
    }
    section.dataset.refreshed = String(Number(section.dataset.refreshed || 0) + 1);
  }

  async function fetchSlots(turnId) {
    const query = turnId ? `?turn=${encodeURIComponent(turnId)}` : "";
    const response = await fetch(`${slotsBox.dataset.slotsUrl}${query}`, { credentials: "same-origin" });
    if (!response.ok) return;
    (await response.json()).forEach(showSlot);
  }

  function slotsListening(attribute, names) {
    return [...slotsBox.querySelectorAll(".ui-slot")].some((s) =>
      (s.dataset[attribute] || "").split(" ").some((w) => names.has(w)));
  }

  // A committed change of a watched namespace: the slot again, from committed data.
  function refreshSlots(changes) {
    if (!slotsBox) return;
    const touched = new Set((changes || []).map((c) => `${c.plugin}/${c.namespace}`));
    if (slotsListening("watch", touched)) fetchSlots(null);
  }

  // A domain event of a running turn whose topic a slot previews: the slot with that turn's events.
  function previewSlots(event) {
    if (!slotsBox || !slotsListening("preview", new Set([event.topic]))) return;
    fetchSlots(event.turnId);
  }

  const handlers = {
    "turn.started": (p) => {
      if (p.kind !== "player") return;
      runtimes.replaceChildren();
      showPlayerLine(turnItem(p.turnId), p.playerMessage);
    },
    "runtime.status": (p) => showRuntime(p),
    "plugin.event": (p) => previewSlots(p),
    "narrative.delta": (p) => {
      const line = turnItem(p.turnId).querySelector(".narrative");
      line.textContent += p.text;
    },
    narrative: (p) => {
      turnItem(p.turnId).querySelector(".narrative").textContent = p.text;
    },
    "plugin-data.changed": (p) => {
      dataChanged(p.changes);
      refreshSlots(p.changes);
    },
    "turn.committed": (p) => {
      if (p.kind === "player") {
        turns.textContent = String(p.number);
        phase.textContent = "playing";
        if (turnTools) {
          turnTools.querySelector('input[name="turn"]').value = p.turnId;
          turnTools.hidden = false;
        }
      }
      if (state) state.textContent = "";
      announce(p.turnId);
    },
    // The last turn was undone (here or in another tab): its story goes.
    "turn.undone": (p) => {
      for (const id of p.removed || []) story.querySelector(`li[data-turn="${CSS.escape(id)}"]`)?.remove();
      turns.textContent = String(p.number ?? turns.textContent);
      const last = [...story.querySelectorAll("li.turn")].pop();
      if (turnTools) {
        turnTools.hidden = !last;
        if (last) turnTools.querySelector('input[name="turn"]').value = last.dataset.turn;
      }
    },
    "settle.waiting": (p) => {
      if (state) state.textContent = `waiting for ${p.count} background job${p.count === 1 ? "" : "s"}...`;
    },
    "settle-timeout": (p) => {
      if (state) state.textContent = `gave up waiting for ${p.pendingJobIds.length} background job(s) after ${p.waitedMs} ms`;
    },
    // The jobs panel (an htmx fragment) reloads when a job is queued or changes state.
    "runtime.deferred": () => refreshJobs(),
    // The job of a deferred runtime: the Runtimes panel shows its state, as the jobs panel does.
    "job-status.updated": (p) => {
      refreshJobs();
      if (!runtimes.querySelector(`li[data-runtime="${CSS.escape(String(p.runtimeId))}"]`)) return;
      const missing = /no model is configured for slot '([^']+)'/.exec(String(p.error || ""));
      showRuntime({
        runtime: p.runtimeId,
        status: p.state,
        code: missing ? "no-model-configured" : p.reason || "",
        reason: missing ? `needs the '${missing[1]}' slot` : p.error || "",
      });
    },
    // A switch made elsewhere (another tab, the API, staff): show who the seat plays now.
    "seat.changed": (p) => {
      const section = document.querySelector(`[data-seat="${CSS.escape(String(p.seatId))}"]`);
      if (!section) return;
      const radios = [...section.querySelectorAll('input[name="current"]')];
      const bound = p.characterIds || [];
      if (radios.length !== bound.length || radios.some((r) => !bound.includes(r.value))) {
        window.location.reload(); // characters were bound or unbound: the forms change shape
        return;
      }
      const radio = radios.find((r) => r.value === p.currentCharacterId);
      if (radio) radio.checked = true;
      const name = section.querySelector(".seat-current");
      if (name) name.textContent = radio ? radio.parentElement.textContent.trim() : "";
    },
    "ui.rendered": (p) => showBlock(p.block || {}),
    "interaction.created": () => refreshForms(),
    "notification.created": (p) => showNotice(p),
    // A hook's abort or failure and a skipped extension provider are never silent.
    // Their notice line is written by the server (sessions.selectors.problem_notice).
    "hook.aborted": (p) => p.notice && showNotice(p.notice),
    "hook.failed": (p) => p.notice && showNotice(p.notice),
    "extension.failed": (p) => p.notice && showNotice(p.notice),
    "turn.failed": (p) => {
      if (state) state.textContent = `The turn failed: ${p.error}`;
    },
  };

  // A ui.render block (sessions/_ui_block.html): its parts as text or JSON, never as markup.
  function showBlock(block) {
    const item = turnItem(String(block.meta?.turnId || ""));
    if (item.querySelector(`[data-block="${CSS.escape(String(block.id))}"]`)) return;
    const section = el("section", "ui-block");
    section.dataset.block = String(block.id);
    section.dataset.plugin = String(block.meta?.pluginId || "");
    const parts = el("ol", "ui-parts");
    for (const part of block.data?.parts || []) {
      const li = el("li", "ui-part");
      li.dataset.partType = String(part.type ?? "");
      li.append(el("span", "part-type", part.type));
      if (part.status) li.append(" ", el("span", "part-status muted", part.status));
      const structured = part.content !== null && typeof part.content === "object";
      const content = structured ? el("pre", "part-content", JSON.stringify(part.content, null, 2)) : el("p", "part-content", plain(part.content));
      if (structured) content.tabIndex = 0;
      li.append(content);
      parts.append(li);
    }
    section.append(el("p", "ui-block-from muted", block.meta?.pluginId), parts);
    item.append(section);
  }

  // ---------------------------------------------------------------- forms and notices

  // The live region reads a committed turn's story once (not every streamed word).
  function announce(turnId) {
    if (!storyLive) return;
    const item = story.querySelector(`li[data-turn="${CSS.escape(String(turnId))}"]`);
    const text = item?.querySelector(".narrative")?.textContent.trim();
    if (text) storyLive.textContent = text;
  }

  function showNotice(notice) {
    notices.querySelector(".empty")?.remove();
    const count = document.getElementById("notice-count");
    if (count) count.textContent = `(${notices.querySelectorAll("li.notification").length + 1})`;
    const item = el("li", `notification level-${String(notice.level || "info").replace(/[^a-z]/g, "")}`);
    if (notice.problem) item.dataset.problem = notice.problem;
    item.append(el("strong", "title", notice.title));
    if (notice.body) item.append(el("span", "body", notice.body));
    item.append(el("span", "from muted", notice.pluginId));
    notices.prepend(item);
  }

  // New forms come from the server's own (escaped) fragment; forms already on the page stay
  // as they are, so nothing the player has typed is lost.
  async function refreshForms() {
    const response = await fetch(root.dataset.formsUrl, { credentials: "same-origin" });
    if (!response.ok) return;
    const fragment = new DOMParser().parseFromString(await response.text(), "text/html");
    const present = new Set([...formsBox.querySelectorAll("form.ask")].map((f) => f.dataset.interaction));
    for (const form of fragment.querySelectorAll("form.ask")) {
      if (!present.has(form.dataset.interaction)) formsBox.append(document.importNode(form, true));
    }
    asks.hidden = !formsBox.querySelector("form.ask");
  }

  function askValues(form) {
    const values = {};
    for (const box of form.querySelectorAll(".ask-field")) {
      const input = box.querySelector("input, textarea, select");
      const type = box.dataset.type;
      if (type === "checkbox" || type === "toggle") values[box.dataset.field] = input.checked;
      else if (type === "number" || type === "integer") {
        if (input.value.trim() !== "") values[box.dataset.field] = Number(input.value);
      } else values[box.dataset.field] = input.value;
    }
    return values;
  }

  // The API's error shape (docs/api.md): {code, message, details}; a form's issues point at
  // /body/values/<field>, or at /body/values for the whole form.
  function errorMessage(answer) {
    return String(answer.data.message || answer.data.detail || `error ${answer.status}`);
  }

  function fieldIssues(error) {
    return ((error.details && error.details.issues) || []).map((issue) => {
      const token = String(issue.path || "").replace(/^\/body\/values\/?/, "");
      const field = token === "" ? null : token.replace(/~1/g, "/").replace(/~0/g, "~");
      return { field, message: issue.message };
    });
  }

  function showIssues(form, issues) {
    const slots = [...form.querySelectorAll(".issue")];
    for (const slot of slots) {
      slot.textContent = "";
      slot.hidden = true;
    }
    form.querySelectorAll("[aria-invalid]").forEach((input) => input.removeAttribute("aria-invalid"));
    for (const issue of issues) {
      const wanted = issue.field == null ? "" : String(issue.field);
      const slot = slots.find((s) => s.dataset.issueFor === wanted) || form.querySelector(".form-issue");
      slot.textContent = slot.textContent ? `${slot.textContent} ${issue.message}` : String(issue.message);
      slot.hidden = false;
      slot.closest(".ask-field")?.querySelector("input, textarea, select")?.setAttribute("aria-invalid", "true");
    }
  }

  function markAnswered(form) {
    form.classList.add("answered");
    form.querySelectorAll("input, textarea, select, button").forEach((input) => {
      input.disabled = true;
    });
    form.querySelector("button[type=submit]")?.replaceWith(el("p", "answered-note", "Answered."));
  }

  formsBox?.addEventListener("submit", async (event) => {
    const form = event.target.closest("form.ask");
    if (!form) return;
    event.preventDefault();
    const button = form.querySelector("button[type=submit]");
    const status = form.querySelector(".ask-state");
    button.disabled = true;
    status.textContent = "Sending...";
    try {
      const url = `${root.dataset.interactionsUrl}/${encodeURIComponent(form.dataset.interaction)}`;
      const answer = await post(url, { values: askValues(form) });
      status.textContent = "";
      if (answer.ok) {
        showIssues(form, []);
        markAnswered(form);
      } else if (answer.data.code === "form_rejected") {
        showIssues(form, fieldIssues(answer.data));
      } else {
        showIssues(form, [{ field: null, message: errorMessage(answer) }]);
        if (answer.data.code === "interaction_already_submitted") markAnswered(form);
      }
    } finally {
      if (!form.classList.contains("answered")) button.disabled = false;
    }
  });

  function refreshJobs() {
    const panel = document.getElementById("jobs-panel");
    if (panel && window.htmx) {
      window.htmx.ajax("GET", panel.dataset.panelUrl, { target: panel, swap: "outerHTML" });
    }
  }

  function connect() {
    // EventSource resends Last-Event-ID itself when it reconnects; ?after= covers the first connect.
    const source = new EventSource(`${root.dataset.eventsUrl}?after=${encodeURIComponent(root.dataset.lastSeq)}`);
    for (const [type, handle] of Object.entries(handlers)) {
      source.addEventListener(type, (event) => {
        const data = JSON.parse(event.data);
        root.dataset.lastSeq = String(data.seq);
        handle(data.payload || {});
        document.dispatchEvent(new CustomEvent(`play:${type}`, { detail: data.payload || {} }));
      });
    }
    // The jobs panel does not poll: job events on this stream refresh it, and so does every
    // (re)connect, which covers whatever changed while the stream was away.
    source.addEventListener("open", () => refreshJobs());
    // The server closed this stream for a newer one of this player's (docs/deploy.md): stop,
    // or this tab and the newer one would take turns closing each other.
    source.addEventListener("stream.closed", () => {
      source.close();
      root.dataset.connected = "false";
    });
    root.dataset.connected = "true";
  }

  async function post(url, body) {
    const response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
      body: JSON.stringify(body),
    });
    const data = await response.json().catch(() => ({}));
    return { ok: response.ok, status: response.status, data };
  }

  // ---------------------------------------------------------------- slash commands

  // The session's commands, as the page listed them (<template id="command-list">).
  function commands() {
    if (!commandList) return [];
    return [...commandList.content.querySelectorAll("li.command")].map((li) => ({
      name: li.dataset.name,
      aliases: (li.dataset.aliases || "").split(" ").filter(Boolean),
      usage: li.dataset.usage,
      node: li,
    }));
  }

  function findCommand(name) {
    return commands().find((c) => c.name === name || c.aliases.includes(name));
  }

  function helpNode() {
    const list = el("ul", "help-list");
    list.append(...[...(commandList?.content.children || [])].map((li) => document.importNode(li, true)));
    return list;
  }

  let menuIndex = -1;

  function menuItems() {
    return commandMenu ? [...commandMenu.querySelectorAll("li[role=option]")] : [];
  }

  function closeMenu() {
    if (!commandMenu) return;
    commandMenu.hidden = true;
    commandMenu.replaceChildren();
    menuIndex = -1;
    composer.querySelector("textarea").removeAttribute("aria-activedescendant");
  }

  function highlight(index) {
    const items = menuItems();
    if (!items.length) return;
    menuIndex = (index + items.length) % items.length;
    items.forEach((item, i) => item.setAttribute("aria-selected", String(i === menuIndex)));
    composer.querySelector("textarea").setAttribute("aria-activedescendant", items[menuIndex].id);
    items[menuIndex].scrollIntoView({ block: "nearest" });
  }

  // Typing "/" and a name: the commands whose name or alias starts with it, and /help.
  function updateMenu(box) {
    if (!commandMenu) return;
    const match = /^\/(\S*)$/.exec(box.value);
    if (!match) return closeMenu();
    const typed = match[1].toLowerCase();
    const found = commands().filter((c) => [c.name, ...c.aliases].some((n) => n.toLowerCase().startsWith(typed)));
    const rows = found.map((c) => ({ name: c.name, usage: c.usage, text: c.node.querySelector(".description")?.textContent || "" }));
    if ("help".startsWith(typed)) rows.push({ name: "help", usage: "/help", text: say("tHelp", "List the commands of this session") });
    if (!rows.length) return closeMenu();
    commandMenu.replaceChildren(...rows.map((row, i) => {
      const item = el("li");
      item.id = `command-option-${i}`;
      item.setAttribute("role", "option");
      item.dataset.name = row.name;
      item.append(el("code", "usage", row.usage), " ", el("span", "description", row.text));
      return item;
    }));
    commandMenu.hidden = false;
    highlight(0);
  }

  function pick(item) {
    const box = composer.querySelector("textarea");
    box.value = `/${item.dataset.name} `;
    closeMenu();
    box.focus();
  }

  commandMenu?.addEventListener("mousedown", (event) => {
    const item = event.target.closest("li[role=option]");
    if (item) {
      event.preventDefault();
      pick(item);
    }
  });

  const messageBox = composer?.querySelector("textarea");
  messageBox?.addEventListener("input", () => updateMenu(messageBox));
  messageBox?.addEventListener("blur", () => setTimeout(closeMenu, 150));

  // Enter sends, Shift+Enter is a new line (and Enter while an input method composes is its own).
  // With the command menu open, arrows move, Enter or Tab picks, Escape closes.
  messageBox?.addEventListener("keydown", (event) => {
    if (event.isComposing || event.keyCode === 229) return;
    const open = commandMenu && !commandMenu.hidden;
    if (open && (event.key === "ArrowDown" || event.key === "ArrowUp")) {
      event.preventDefault();
      highlight(menuIndex + (event.key === "ArrowDown" ? 1 : -1));
      return;
    }
    if (open && event.key === "Escape") {
      event.preventDefault();
      closeMenu();
      return;
    }
    if (open && (event.key === "Tab" || event.key === "Enter") && !event.shiftKey && menuIndex >= 0) {
      const item = menuItems()[menuIndex];
      // "/roll" fully typed: Enter sends it rather than picking it again.
      if (event.key === "Tab" || messageBox.value.trim() !== `/${item.dataset.name}`) {
        event.preventDefault();
        pick(item);
        return;
      }
    }
    if (event.key === "Enter" && !event.shiftKey && !event.altKey && !event.ctrlKey && !event.metaKey) {
      event.preventDefault();
      closeMenu();
      composer.requestSubmit();
    }
  });

  // A refused command: the server's message, and how the command is typed.
  function commandError(text, answer) {
    const box = el("div");
    box.append(el("p", "error-text", errorMessage(answer)));
    const name = text.slice(1).split(/\s+/)[0];
    const usage = answer.data.details?.usage || findCommand(name)?.usage;
    if (usage) box.append(el("p", "usage", `${say("tUsage", "Usage:")} `), el("code", "", usage));
    if (answer.data.code === "unknown-command" || /no command/.test(errorMessage(answer))) {
      box.append(el("p", "muted", say("tHelpHint", "Type /help for the list of commands.")));
    }
    return box;
  }

  composer?.addEventListener("submit", async (event) => {
    event.preventDefault();
    const box = composer.querySelector("textarea");
    const text = box.value.trim();
    if (!text) return;
    closeMenu();
    if (text === "/help" || text === "/?") {
      showCommandResult(helpNode());
      box.value = "";
      return;
    }
    const button = composer.querySelector("button");
    button.disabled = true;
    state.textContent = text.startsWith("/") ? say("tRunning", "Running the command...") : say("tUnfolds", "The story unfolds...");
    try {
      if (text.startsWith("/")) {
        const answer = await post(root.dataset.commandsUrl, { text });
        showCommandResult(answer.ok ? commandNode(answer.data.value) : commandError(text, answer));
        state.textContent = "";
        if (answer.ok) box.value = "";
      } else {
        clearCommandResult();
        const answer = await post(root.dataset.actionsUrl, { message: text });
        if (!answer.ok) state.textContent = errorMessage(answer);
        else state.textContent = "";
        box.value = "";
      }
    } finally {
      button.disabled = false;
      box.focus();
    }
  });

  connect();
})();
