// Ordering and summary helpers of `@covel/plugin-handlers-utils` (Covel: src/compare-text.ts and
// src/session-summary.ts). Same signatures and results; the code is ours.

/**
 * compareText(left, right): -1, 0 or 1, ordering two strings by Unicode code point after NFC
 * normalisation, so a sort is the same on every host and in every locale (localeCompare is not).
 */
export function compareText(left, right) {
  const a = String(left).normalize("NFC");
  const b = String(right).normalize("NFC");
  const ai = a[Symbol.iterator]();
  const bi = b[Symbol.iterator]();
  for (;;) {
    const x = ai.next();
    const y = bi.next();
    if (x.done || y.done) return x.done && y.done ? 0 : x.done ? -1 : 1;
    const d = x.value.codePointAt(0) - y.value.codePointAt(0);
    if (d !== 0) return Math.sign(d);
  }
}

// session.summary@1 holds at most this many entries across all of its providers.
const SUMMARY_ENTRIES_MAX = 16;

/**
 * appendSummaryEntries(previous, entries): the session.summary@1 value a provider returns: the
 * entries the providers before it gave, then its own, cut at the contract's 16. Providers run as
 * a chain, so returning only one's own entries would drop the others'.
 */
export function appendSummaryEntries(previous, entries) {
  const earlier =
    previous && typeof previous === "object" && Array.isArray(previous.entries) ? previous.entries : [];
  return { entries: [...earlier, ...(entries ?? [])].slice(0, SUMMARY_ENTRIES_MAX) };
}
