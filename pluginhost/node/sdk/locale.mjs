// Locale tags, the app's locale registry and locale-keyed text (I18nText), as Covel's SDK gives
// them to plugin code. Behaviour follows Covel's public helpers; the code is ours.

export const MAX_LOCALE_CODE_LENGTH = 64;
// Letters and digits in hyphen-separated runs of 1-8: nothing path-like reaches Intl.
export const LOCALE_CODE_RE = /^[a-z0-9]{1,8}(?:-[a-z0-9]{1,8})*$/i;

/** `ru_ru` -> `ru-RU`; undefined for anything that is not a safe BCP 47 tag. */
export function canonicalizeLocale(locale) {
  if (typeof locale !== "string") return undefined;
  const tag = locale.trim().replaceAll("_", "-");
  if (!tag || tag.length > MAX_LOCALE_CODE_LENGTH || !LOCALE_CODE_RE.test(tag)) return undefined;
  try {
    return Intl.getCanonicalLocales(tag)[0];
  } catch {
    return undefined;
  }
}

export function isLocaleCode(value) {
  return typeof value === "string" && canonicalizeLocale(value) !== undefined;
}

/** Lower case, hyphens: for comparing two tags. */
export function normalizeLocale(locale) {
  return String(locale).trim().replaceAll("_", "-").toLowerCase();
}

export function localeLanguage(locale) {
  if (!locale) return undefined;
  return normalizeLocale(locale).split("-")[0] || undefined;
}

function likelyScript(locale) {
  const tag = canonicalizeLocale(locale);
  if (!tag) return undefined;
  try {
    return new Intl.Locale(tag).maximize().script;
  } catch {
    return undefined;
  }
}

/** Same language and same likely script (zh-TW is Hant, bare zh is Hans: not the same). */
export function localesShareLanguageAndScript(first, second) {
  const language = localeLanguage(first);
  if (!language || language !== localeLanguage(second)) return false;
  const script = likelyScript(first);
  return script !== undefined && script === likelyScript(second);
}

/** The tag itself, then its bare language when that keeps the script. */
export function localeLookupCandidates(locale) {
  const tag = canonicalizeLocale(locale);
  if (!tag) return [];
  const language = localeLanguage(tag);
  if (!language || language === normalizeLocale(tag) || !localesShareLanguageAndScript(tag, language)) return [tag];
  return [tag, language];
}

export function localeDisplayName(locale) {
  const tag = canonicalizeLocale(locale);
  if (!tag) return locale;
  try {
    return new Intl.DisplayNames([tag], { type: "language" }).of(tag) ?? tag;
  } catch {
    return tag;
  }
}

/** An immutable registry: lookup by code or alias, best-fit match, fallback order. */
export function defineLocaleRegistry(definitions, { defaultLocale, fallbackLocale }) {
  const byCode = new Map();
  const byAlias = new Map();
  const fallbacks = new Map();
  for (const definition of definitions) {
    const tag = canonicalizeLocale(definition.code);
    if (!tag) throw new Error(`Invalid locale code: ${definition.code}`);
    if (tag !== definition.code) throw new Error(`Locale code must be canonical: ${definition.code} -> ${tag}`);
    const key = normalizeLocale(tag);
    if (byCode.has(key)) throw new Error(`Duplicate locale code: ${definition.code}`);
    byCode.set(key, definition);
    fallbacks.set(
      definition,
      (definition.fallbackLocales ?? []).map((fallback) => {
        const canonical = canonicalizeLocale(fallback);
        if (!canonical) throw new Error(`Invalid fallback locale for ${definition.code}: ${fallback}`);
        return canonical;
      }),
    );
  }
  for (const definition of definitions) {
    for (const alias of definition.aliases ?? []) {
      const tag = canonicalizeLocale(alias);
      if (!tag) throw new Error(`Invalid locale alias: ${alias}`);
      const key = normalizeLocale(tag);
      if (byAlias.has(key) || byCode.has(key)) throw new Error(`Duplicate locale alias: ${alias}`);
      byAlias.set(key, definition);
    }
  }
  const get = (code) => {
    const tag = canonicalizeLocale(code);
    return tag ? byCode.get(normalizeLocale(tag)) : undefined;
  };
  const resolve = (locale) => {
    const tag = canonicalizeLocale(locale);
    if (!tag) return undefined;
    const key = normalizeLocale(tag);
    return byCode.get(key) ?? byAlias.get(key);
  };
  const match = (locale) => {
    const exact = resolve(locale);
    if (exact) return exact;
    const language = localeLanguage(locale);
    if (!language) return undefined;
    return definitions.find((d) => localeLanguage(d.code) === language && localesShareLanguageAndScript(locale, d.code));
  };
  const fallbackLocalesFor = (locale) => {
    const definition = resolve(locale);
    const list = [...(definition ? fallbacks.get(definition) ?? [] : [])];
    if (definition?.code !== fallbackLocale) list.push(fallbackLocale);
    const seen = new Set();
    return list.filter((tag) => {
      const key = normalizeLocale(tag);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  };
  if (!get(defaultLocale) || !get(fallbackLocale)) {
    throw new Error("Locale registry defaults must reference registered codes");
  }
  return Object.freeze({
    definitions,
    codes: definitions.map((d) => d.code),
    defaultLocale,
    fallbackLocale,
    get,
    resolve,
    match,
    has: (value) => typeof value === "string" && get(value) !== undefined,
    canonicalize: (locale) => resolve(locale)?.code,
    fallbackLocalesFor,
  });
}

// The three application locales Covel ships: Simplified Chinese (the default), English (the
// fallback) and Russian.
export const LOCALE_DEFINITIONS = Object.freeze([
  {
    code: "zh-CN",
    label: { "zh-CN": "简体中文", "en-US": "Chinese (Simplified)", "ru-RU": "Китайский (упрощённый)" },
    shortLabel: "中",
    aliases: ["zh", "zh-Hans"],
    fallbackLocales: ["en-US"],
  },
  {
    code: "en-US",
    label: { "zh-CN": "英语", "en-US": "English", "ru-RU": "Английский" },
    shortLabel: "EN",
    aliases: ["en"],
  },
  {
    code: "ru-RU",
    label: { "zh-CN": "俄语", "en-US": "Russian", "ru-RU": "Русский" },
    shortLabel: "RU",
    aliases: ["ru"],
    fallbackLocales: ["en-US"],
  },
]);

export const localeRegistry = defineLocaleRegistry(LOCALE_DEFINITIONS, { defaultLocale: "zh-CN", fallbackLocale: "en-US" });
export const SUPPORTED_LOCALES = localeRegistry.codes;
export const DEFAULT_LOCALE = localeRegistry.defaultLocale;
export const DEFAULT_FALLBACK_LOCALE = localeRegistry.fallbackLocale;

export function isDefaultLocale(locale) {
  return localeRegistry.resolve(locale)?.code === DEFAULT_LOCALE;
}

/** Two languages written in the code: the Chinese text for zh / zh-CN / zh-Hans only. */
export function pickLocaleText(locale, zh, en) {
  const tag = typeof locale === "string" ? locale.trim().replaceAll("_", "-").toLowerCase() : undefined;
  return tag === "zh" || tag === "zh-cn" || tag === "zh-hans" ? zh : en;
}

// --- I18nText: a string, or a record from locale tag to string ---

function entryFor(text, locale) {
  const wanted = normalizeLocale(locale);
  for (const [key, value] of Object.entries(text)) {
    if (typeof value === "string" && normalizeLocale(key) === wanted) return value;
  }
  return undefined;
}

function sameScriptEntry(text, locale) {
  for (const [key, value] of Object.entries(text)) {
    if (typeof value === "string" && localesShareLanguageAndScript(locale, key)) return value;
  }
  return undefined;
}

const firstString = (text) => Object.values(text).find((value) => typeof value === "string");

/**
 * The text for one locale: the exact tag, its bare language, a same-language same-script
 * variant, then each registry fallback the same way, then the first string. A bare string is
 * returned as it is; undefined stays undefined.
 */
export function resolveI18nText(text, locale) {
  if (text === undefined) return undefined;
  if (typeof text === "string") return text;
  if (text === null || typeof text !== "object") return undefined;
  if (typeof locale !== "string" || !locale.trim()) return firstString(text);
  const exact = entryFor(text, locale);
  if (exact !== undefined) return exact;
  for (const candidate of localeLookupCandidates(locale).slice(1)) {
    const found = entryFor(text, candidate);
    if (found !== undefined) return found;
  }
  const variant = sameScriptEntry(text, locale);
  if (variant !== undefined) return variant;
  for (const fallback of localeRegistry.fallbackLocalesFor(locale)) {
    for (const candidate of localeLookupCandidates(fallback)) {
      const found = entryFor(text, candidate);
      if (found !== undefined) return found;
    }
    const fallbackVariant = sameScriptEntry(text, fallback);
    if (fallbackVariant !== undefined) return fallbackVariant;
  }
  return firstString(text);
}

const LANGUAGE_NAMES = new Intl.DisplayNames(["en"], { type: "language", fallback: "none" });

/** A tag of a real language: `backup` is well-formed but names none. */
export function isKnownLocale(key) {
  const tag = canonicalizeLocale(key);
  return tag !== undefined && LANGUAGE_NAMES.of(localeLanguage(tag) ?? tag) !== undefined;
}

const REGISTERED_LANGUAGES = new Set(localeRegistry.codes.map((code) => localeLanguage(code) ?? code));

// `id`, `no`, `is` are language codes and far more often field names: one key of a locale map
// must carry a script or region, or be a registered language.
function isUnambiguousLocaleKey(key) {
  const tag = canonicalizeLocale(key);
  if (!tag) return false;
  return tag.includes("-") || REGISTERED_LANGUAGES.has(localeLanguage(tag) ?? tag);
}

export function isLocaleMap(value) {
  if (!value || typeof value !== "object" || Array.isArray(value)) return false;
  const entries = Object.entries(value);
  if (!entries.length) return false;
  return entries.every(([key, item]) => typeof item === "string" && isKnownLocale(key)) && entries.some(([key]) => isUnambiguousLocaleKey(key));
}

/** A copy of value with every inline locale map resolved to one string. */
export function resolveI18nDeep(value, locale) {
  if (Array.isArray(value)) return value.map((item) => resolveI18nDeep(item, locale));
  if (isLocaleMap(value)) return resolveI18nText(value, locale) ?? "";
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, resolveI18nDeep(item, locale)]));
  }
  return value;
}

export const WORLD_LOCALIZED_TEXT_KEY = "localizedText";

/** A world's name, description (and lore, when it has one) in one locale. */
export function localizedWorldText(world, locale) {
  const localized = world?.metadata?.[WORLD_LOCALIZED_TEXT_KEY];
  const pick = (field) => {
    // The stored default edition wins in its own language: it may have been edited since.
    if (world?.[field] !== undefined && world.locale && (!locale || localesShareLanguageAndScript(world.locale, locale))) {
      return world[field];
    }
    const text = localized && typeof localized === "object" ? localized[field] : undefined;
    const resolved = typeof text === "string" || isLocaleMap(text) ? resolveI18nText(text, locale) : undefined;
    return resolved?.trim() ? resolved : world?.[field];
  };
  const out = { name: pick("name"), description: pick("description") };
  const lore = pick("lore");
  if (lore !== undefined) out.lore = lore;
  return out;
}
