// Text helpers of `@covel/plugin-handlers-utils`: translations of code text, mentions of
// characters, and the small string/list/record helpers handlers share. Same signatures and
// results as Covel's SDK; the code is ours.

// --- translations written by the plugin (ctx.messages) ---

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
const own = (object, key) => object !== null && typeof object === "object" && Object.hasOwn(object, key);

/**
 * translate(ctx, text, params?): the English `text` in the session's language, from
 * ctx.messages.translations, with each {name} filled from params. No catalogue gives `text`.
 */
export function translate(ctx, text, params) {
  const translations = ctx?.messages?.translations;
  const template = own(translations, text) ? translations[text] : text;
  if (!params) return template;
  return String(template).replace(PLACEHOLDER, (whole, name) => (own(params, name) ? String(params[name]) : whole));
}

/** labelText(ctx, text): every language the plugin ships ({en, zh, …}) for the client, else `text`. */
export function labelText(ctx, text) {
  const labels = ctx?.messages?.labels;
  if (!own(labels, text)) return text;
  return { en: text, ...labels[text] };
}

// --- who a text mentions ---

// A letter or digit of a script that separates words with spaces; Han, kana and Hangul do not.
const SPACED_WORD = /^(?![\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}])[\p{L}\p{N}]$/u;
const wordChar = (ch) => ch !== undefined && SPACED_WORD.test(ch);

function spansOf(text, name) {
  const spans = [];
  const chars = [...name];
  const startsWord = wordChar(chars[0]);
  const endsWord = wordChar(chars[chars.length - 1]);
  for (let at = text.indexOf(name); at !== -1; at = text.indexOf(name, at + 1)) {
    const end = at + name.length;
    if (startsWord && wordChar([...text.slice(0, at)].pop())) continue;
    if (endsWord && wordChar([...text.slice(end)][0])) continue;
    spans.push({ start: at, end });
  }
  return spans;
}

/**
 * The IDs (a Set) of the characters whose name or alias `text` contains, ignoring case. A name
 * of a spaced script must stand as a word; a name inside a longer name of someone else does not
 * count unless it also stands alone.
 */
export function mentionedCharacterIds(text, characters) {
  const haystack = String(text ?? "").toLowerCase();
  const found = [];
  if (haystack) {
    for (const character of characters ?? []) {
      if (!character?.id || !character?.name) continue;
      const names = [character.name, ...(Array.isArray(character.aliases) ? character.aliases : [])];
      for (const name of names) {
        if (typeof name !== "string" || !name.trim()) continue;
        for (const span of spansOf(haystack, name.trim().toLowerCase())) found.push({ ...span, id: character.id });
      }
    }
  }
  const ids = new Set();
  for (const span of found) {
    const inLonger = found.some(
      (other) => other.id !== span.id && other.start <= span.start && other.end >= span.end && other.end - other.start > span.end - span.start,
    );
    if (!inLonger) ids.add(span.id);
  }
  return ids;
}

// --- strings, lists, records ---

export function normalizeRequiredString(value, field) {
  if (typeof value !== "string" || !value.trim()) throw new Error(`${field} must be a non-empty string`);
  return value.trim();
}

export function optionalString(value) {
  return typeof value === "string" && value.trim() ? value.trim() : undefined;
}

function numeric(value, accept) {
  if (typeof value === "number") return accept(value) ? value : undefined;
  if (typeof value !== "string" || !value.trim()) return undefined;
  const parsed = Number(value);
  return accept(parsed) ? parsed : undefined;
}

export const optionalNumber = (value) => numeric(value, Number.isFinite);
export const optionalInteger = (value) => numeric(value, Number.isInteger);

/** Up to 32 trimmed, non-blank items: an array's strings, or a string split on , ， and newlines. */
export function splitList(value) {
  let parts = [];
  if (Array.isArray(value)) parts = value.filter((item) => typeof item === "string");
  else if (typeof value === "string") parts = value.split(/[,，\n]/);
  return parts.map((item) => item.trim()).filter(Boolean).slice(0, 32);
}

/** A copy without undefined values (and without empty arrays when asked). */
export function compactRecord(value, options = {}) {
  const dropEmpty = options?.dropEmptyArrays === true;
  const out = {};
  for (const [key, entry] of Object.entries(value ?? {})) {
    if (entry === undefined) continue;
    if (dropEmpty && Array.isArray(entry) && entry.length === 0) continue;
    out[key] = entry;
  }
  return out;
}

const isPlainObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

/** A manual payload's entity: `<entity>Json` (parsed), `<entity>Form` (via fromForm), else `<entity>`. */
export function readManualEntity(payload, entity, fromForm) {
  if (!isPlainObject(payload)) return undefined;
  const json = payload[`${entity}Json`];
  if (typeof json === "string" && json.trim()) {
    try {
      return JSON.parse(json);
    } catch {
      throw new Error(`manualPayload.${entity}Json must be valid JSON`);
    }
  }
  const form = payload[`${entity}Form`];
  if (form && typeof form === "object") return fromForm(form);
  return payload[entity];
}

const ENVELOPE_LIMIT = 65536; // characters of JSON

/** The checks every manual-entity handler makes: an object, a valid id, schemaVersion 1, at most 64 KB. */
export function assertEntityEnvelope(value, options) {
  const { entity, idField = "id", idPattern, idError, build } = options;
  if (!isPlainObject(value)) throw new Error(`manualPayload.${entity} must be an object`);
  const id = normalizeRequiredString(value[idField], `${entity}.${idField}`);
  if (!idPattern.test(id)) throw new Error(idError);
  if ((value.schemaVersion ?? 1) !== 1) throw new Error(`${entity}.schemaVersion must be 1`);
  const base = { ...value, schemaVersion: 1, [idField]: id };
  const built = build ? build(base) : base;
  if (JSON.stringify(built).length > ENVELOPE_LIMIT) throw new Error(`${entity} is too large; max serialized size is 64KB`);
  return built;
}

/** A signal that aborts with the turn's signal or after timeoutMs, whichever comes first. */
export function abortSignalWithTimeout(signal, timeoutMs) {
  const timeout = AbortSignal.timeout(timeoutMs);
  return signal ? AbortSignal.any([signal, timeout]) : timeout;
}

// --- the plugin's own buffered writes, overlaid on store reads ---

function* pluginDataWrites(proposals, pluginId) {
  for (const proposal of proposals ?? []) {
    if (proposal?.source?.pluginId !== pluginId) continue;
    const payload = proposal.payload ?? {};
    if (proposal.type === "plugin.data") yield { namespace: payload.namespace, key: payload.key, value: payload.value };
    else if (proposal.type === "plugin.data.batch") {
      for (const item of payload.items ?? []) yield { namespace: item.namespace, key: item.key, value: item.value };
    } else if (proposal.type === "plugin.data.delete") {
      yield { namespace: payload.namespace, key: payload.key, value: null, deleted: true };
    }
  }
}

/** The last buffered write of (namespace, key) by pluginId: {hit:false} when none touched it. */
export function overlayPluginDataValue(proposals, pluginId, namespace, key) {
  let result = { hit: false };
  for (const write of pluginDataWrites(proposals, pluginId)) {
    if (write.namespace !== namespace || write.key !== key) continue;
    result = write.deleted ? { hit: true, value: null, deleted: true } : { hit: true, value: write.value };
  }
  return result;
}

/** Every buffered row of pluginId (in one namespace when given), keyed by JSON [namespace, key]. */
export function overlayPluginDataRows(proposals, pluginId, namespace) {
  const rows = new Map();
  for (const write of pluginDataWrites(proposals, pluginId)) {
    if (namespace !== undefined && write.namespace !== namespace) continue;
    const row = { namespace: write.namespace, key: write.key, value: write.value };
    if (write.deleted) row.deleted = true;
    rows.set(JSON.stringify([write.namespace, write.key]), row);
  }
  return rows;
}
