// Small behaviours every page shares. They live here, not in inline handlers, so that the
// Content-Security-Policy can refuse inline script.
(() => {
  // A control marked data-autosubmit submits its form when it changes (the world picker).
  document.addEventListener("change", (event) => {
    const control = event.target.closest("[data-autosubmit]");
    if (control && control.form) control.form.requestSubmit();
  });

  // A button marked data-confirm asks first, and does nothing when the answer is no.
  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-confirm]");
    if (button && !window.confirm(button.dataset.confirm)) event.preventDefault();
  });

  // A slider shows its value as it moves.
  document.addEventListener("input", (event) => {
    const input = event.target;
    if (input.matches('input[type="range"][data-output]')) {
      const output = document.getElementById(input.dataset.output);
      if (output) output.value = input.value;
    }
  });

  // Tabs (the package page): one panel at a time, the address keeps the tab so Back and a
  // shared link land on it. Without script every panel shows, one after the other.
  const tabList = document.querySelector(".tabs[role=tablist]");
  if (tabList) {
    const tabs = [...tabList.querySelectorAll("[role=tab]")];
    const panels = tabs.map((tab) => document.getElementById(tab.getAttribute("aria-controls"))).filter(Boolean);
    const show = (id) => {
      if (!panels.some((panel) => panel.id === id)) id = panels[0].id;
      for (const panel of panels) panel.hidden = panel.id !== id;
      for (const tab of tabs) {
        const selected = tab.getAttribute("aria-controls") === id;
        tab.setAttribute("aria-selected", String(selected));
        // One tab stop for the list; the arrow keys move between the tabs (WAI-ARIA tabs).
        tab.tabIndex = selected ? 0 : -1;
      }
    };
    const choose = (tab) => {
      const id = tab.getAttribute("aria-controls");
      history.pushState(null, "", `#${id}`);
      show(id);
      tab.focus();
    };
    tabList.addEventListener("keydown", (event) => {
      const index = tabs.indexOf(event.target.closest("[role=tab]"));
      if (index < 0) return;
      const next = { ArrowRight: index + 1, ArrowDown: index + 1, ArrowLeft: index - 1, ArrowUp: index - 1, Home: 0, End: tabs.length - 1 }[event.key];
      if (next === undefined) return;
      event.preventDefault();
      choose(tabs[(next + tabs.length) % tabs.length]);
    });
    tabList.addEventListener("click", (event) => {
      const tab = event.target.closest("[role=tab]");
      if (!tab) return;
      event.preventDefault();
      choose(tab);
    });
    window.addEventListener("popstate", () => show(location.hash.slice(1)));
    show(location.hash.slice(1));
  }

  // htmx keeps a snapshot of the page for Back, taken just before the next results replace it:
  // by then the box already holds the new words. Write into the markup the values of the
  // address the snapshot belongs to, so Back shows the box and the results that go together.
  document.addEventListener("htmx:beforeHistorySave", () => {
    const params = new URLSearchParams(window.location.search);
    for (const form of document.querySelectorAll("form[hx-push-url]")) {
      for (const control of form.querySelectorAll("input[type=search], input[type=text], select")) {
        const value = params.get(control.name) ?? "";
        if (control.tagName === "SELECT") {
          for (const option of control.options) option.toggleAttribute("selected", option.value === value);
        } else {
          control.setAttribute("value", value);
        }
      }
    }
  });

  // After a refused save the page opens on the banner's first refused field.
  const refused = document.querySelector(".settings-banner[data-scroll-to]");
  if (refused) {
    const target = document.getElementById(refused.dataset.scrollTo);
    if (target) {
      target.scrollIntoView({ block: "center" });
      if (typeof target.focus === "function") target.focus({ preventScroll: true });
    }
  }
})();
