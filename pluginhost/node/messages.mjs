// ctx.messages: the translations a package wrote for its code, in the `messages:` section of
// each locales/<locale>.yaml, given to its handlers in the session's language. The shape is
// Covel's ({translations, labels}, what the SDK's translate and labelText read); the code is ours.

import { canonicalizeLocale, isKnownLocale, localesShareLanguageAndScript, resolveI18nText } from "./sdk/locale.mjs";

/**
 * The package's catalogues from Python's load request ([{file, messages}], file "zh.yaml"), one
 * per locale, sorted by locale. A file whose name is not a known language is not a translation.
 */
export function messageCatalogs(raw) {
  const byLocale = new Map();
  for (const entry of Array.isArray(raw) ? raw : []) {
    const tag = /^(.+)\.ya?ml$/.exec(String(entry?.file ?? ""))?.[1];
    const locale = tag ? canonicalizeLocale(tag) : undefined;
    if (!locale || !isKnownLocale(locale)) continue;
    const section = entry?.messages;
    if (section === null || typeof section !== "object" || Array.isArray(section)) continue;
    // Null-prototype maps: a text "__proto__" is a text like any other.
    const messages = Object.assign(Object.create(null), byLocale.get(locale));
    for (const [text, translation] of Object.entries(section)) if (typeof translation === "string") messages[text] = translation;
    byLocale.set(locale, messages);
  }
  return [...byLocale.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([locale, messages]) => ({ locale, messages }));
}

/**
 * What a handler gets as ctx.messages for a session in `locale`; undefined when the package
 * wrote no catalogue. labels holds every language of each text; translations the session's,
 * taken from a catalogue of the same language and script (zh-CN inherits zh, zh-Hant does not).
 * A text without one keeps its English in the code.
 */
export function pluginMessagesFor(catalogs, locale, cache) {
  if (!catalogs || catalogs.length === 0) return undefined;
  const sessionLocale = canonicalizeLocale(locale ?? "") ?? "";
  if (cache?.has(sessionLocale)) return cache.get(sessionLocale);
  const labels = Object.create(null);
  for (const catalog of catalogs) {
    for (const [text, translation] of Object.entries(catalog.messages)) {
      if (!Object.hasOwn(labels, text)) labels[text] = Object.create(null);
      labels[text][catalog.locale] = translation;
    }
  }
  const translations = Object.create(null);
  if (sessionLocale) {
    for (const [text, variants] of Object.entries(labels)) {
      const compatible = Object.fromEntries(Object.entries(variants).filter(([language]) => localesShareLanguageAndScript(sessionLocale, language)));
      if (Object.keys(compatible).length > 0) translations[text] = resolveI18nText({ en: text, ...compatible }, sessionLocale) ?? text;
    }
  }
  for (const variants of Object.values(labels)) Object.freeze(variants);
  const messages = Object.freeze({ translations: Object.freeze(translations), labels: Object.freeze(labels) });
  cache?.set(sessionLocale, messages);
  return messages;
}
