// Operation-based plugin-data writes (ctx.pluginData.update). The handler tries the operations on
// the value it sees now, so a failing one (below min, not an array) throws right there and nothing
// is recorded; the operations themselves travel to Python and are applied again at commit by
// sessions/operations.py. The two must agree op for op, or a write that passed here would be
// refused at commit: tests/sessions/test_ops_parity.py runs the same cases through both.

export class OperationError extends Error {
  constructor(rule, message, { index = null, path = "" } = {}) {
    const where = index === null ? "ops" : `op ${index}`;
    super(`${where}${path ? ` at ${path}` : ""}: ${message} [${rule}]`);
    this.name = "OperationError";
    this.code = "operation_failed"; // what the handler catches; `rule` says which rule failed
    this.rule = rule;
    this.index = index;
    this.path = path;
  }
}

export const OPERATIONS = ["set", "merge", "inc", "append", "insert", "remove", "upsertItem", "delete"];

// The value of a key that holds nothing (never written, or deleted).
const MISSING = Symbol("missing");

// Fields each op may carry besides "op" and "path": [required, optional].
const FIELDS = {
  set: [["value"], []],
  merge: [["value"], []],
  inc: [["by"], ["min", "max"]],
  append: [["value"], []],
  insert: [["index", "value"], []],
  remove: [[], ["index", "match"]],
  upsertItem: [["value"], ["key", "match"]],
  delete: [[], []],
};

const has = (object, name) => Object.prototype.hasOwnProperty.call(object, name);
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const isNumber = (v) => typeof v === "number" && Number.isFinite(v);
const isIndex = (v) => Number.isInteger(v) && v >= 0;
const clone = (v) => structuredClone(v);

function kindOf(value) {
  if (value === MISSING) return "nothing";
  if (value === null) return "null";
  if (typeof value === "boolean") return "a boolean";
  if (typeof value === "number") return "a number";
  if (typeof value === "string") return "a string";
  if (Array.isArray(value)) return "an array";
  return "an object";
}

/** JSON equality: true is not 1, key order does not matter. */
function same(a, b) {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((item, i) => same(item, b[i]));
  if (isObject(a)) {
    if (!isObject(b)) return false;
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => has(b, k) && same(a[k], b[k]));
  }
  return false;
}

// JSON pointers as core/pointer.py reads them (RFC 6901): "~" only as "~0" or "~1", and an array
// token is ASCII digits without a leading zero.
function tokens(pointer) {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) throw new Error(`"${pointer}" is not a JSON pointer: it must be empty or start with /`);
  if (/~(?![01])/.test(pointer)) {
    throw new Error(`"${pointer}" is not a JSON pointer: ~ must be followed by 0 or 1 (~0 for ~, ~1 for /)`);
  }
  return pointer.slice(1).split("/").map((t) => t.replaceAll("~1", "/").replaceAll("~0", "~"));
}

const pointer = (parts) => parts.map((t) => "/" + t.replaceAll("~", "~0").replaceAll("/", "~1")).join("");

function arrayIndex(token, length, index, path) {
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw new OperationError("path-invalid", `"${token}" is not an array index`, { index, path });
  const position = Number(token);
  if (position >= length) {
    throw new OperationError("path-missing", `index ${token} is past the end of an array of ${length}`, { index, path });
  }
  return position;
}

function child(container, token, index, path) {
  if (Array.isArray(container)) return container[arrayIndex(token, container.length, index, path)];
  if (isObject(container)) return has(container, token) ? container[token] : MISSING;
  throw new OperationError("path-missing", `the path goes through ${kindOf(container)}, not an object or array`, { index, path });
}

function validate(op, index) {
  const invalid = (message) => new OperationError("invalid-op", message, { index });
  if (!isObject(op)) throw invalid(`an op must be an object, not ${kindOf(op)}`);
  const kind = op.op;
  if (!has(FIELDS, kind)) {
    throw new OperationError("unknown-op", `unknown op ${JSON.stringify(kind ?? null)}; the ops are ${OPERATIONS.join(", ")}`, { index });
  }
  const [required, optional] = FIELDS[kind];
  const allowed = new Set([...required, ...optional, "op", "path"]);
  const extra = Object.keys(op).filter((name) => !allowed.has(name)).sort();
  if (extra.length) throw invalid(`${kind} takes no field "${extra[0]}"`);
  const missing = required.filter((name) => !has(op, name)).sort();
  if (missing.length) throw invalid(`${kind} needs the field "${missing[0]}"`);
  const path = has(op, "path") ? op.path : "";
  if (typeof path !== "string") throw invalid("path must be a JSON pointer string");
  try {
    tokens(path);
  } catch (error) {
    throw invalid(error.message);
  }
  if (kind === "inc") {
    for (const name of ["by", "min", "max"]) {
      if (has(op, name) && !isNumber(op[name])) throw invalid(`inc ${name} must be a finite number`);
    }
    if (has(op, "min") && has(op, "max") && op.min > op.max) throw invalid(`inc min ${op.min} is above max ${op.max}`);
  }
  if (kind === "merge" && !isObject(op.value)) throw invalid(`merge value must be an object, not ${kindOf(op.value)}`);
  if (kind === "insert" && !isIndex(op.index)) throw invalid("insert index must be an integer of 0 or more");
  if (kind === "remove") {
    if (has(op, "index") === has(op, "match")) throw invalid("remove takes exactly one of index or match");
    if (has(op, "index") && !isIndex(op.index)) throw invalid("remove index must be an integer of 0 or more");
  }
  if (kind === "upsertItem") {
    if (has(op, "key") && has(op, "match")) throw invalid("upsertItem takes key or match, not both");
    if (has(op, "key") && !(typeof op.key === "string" && op.key)) throw invalid("upsertItem key must be a field name");
    if (has(op, "match") && !isObject(op.match)) throw invalid("upsertItem match must be an object");
    if (!has(op, "match") && !isObject(op.value)) throw invalid("upsertItem value must be an object when the item is found by key");
  }
}

function matches(item, match) {
  if (isObject(match)) return isObject(item) && Object.entries(match).every(([k, v]) => has(item, k) && same(item[k], v));
  return same(item, match);
}

/** The new value of the node the op points at (MISSING when it deletes it). */
function applyAt(target, op, index, path) {
  const kind = op.op;
  const value = has(op, "value") ? clone(op.value) : null;
  const fail = (rule, message) => new OperationError(rule, message, { index, path });
  if (kind === "set") return value;
  if (kind === "delete") return MISSING;
  if (kind === "merge") {
    if (target === MISSING || target === null) return value;
    if (!isObject(target)) throw fail("type-mismatch", `merge needs an object here, found ${kindOf(target)}`);
    return { ...target, ...value };
  }
  if (kind === "inc") {
    const start = target === MISSING || target === null ? 0 : target;
    if (typeof start !== "number") throw fail("type-mismatch", `inc needs a number here, found ${kindOf(start)}`);
    const result = start + op.by;
    if (has(op, "min") && result < op.min) throw fail("out-of-range", `inc by ${op.by} gives ${result}, below min ${op.min}`);
    if (has(op, "max") && result > op.max) throw fail("out-of-range", `inc by ${op.by} gives ${result}, above max ${op.max}`);
    return result;
  }
  // The array ops.
  const list = target === MISSING || target === null ? [] : target;
  if (!Array.isArray(list)) throw fail("type-mismatch", `${kind} needs an array here, found ${kindOf(list)}`);
  const items = [...list];
  if (kind === "append") return [...items, value];
  if (kind === "insert") {
    if (op.index > items.length) {
      throw fail("index-out-of-range", `insert index ${op.index} is past the end of an array of ${items.length}`);
    }
    items.splice(op.index, 0, value);
    return items;
  }
  if (kind === "remove") {
    if (!has(op, "index")) return items.filter((item) => !matches(item, op.match));
    if (op.index >= items.length) {
      throw fail("index-out-of-range", `remove index ${op.index} is past the end of an array of ${items.length}`);
    }
    items.splice(op.index, 1);
    return items;
  }
  // upsertItem: replace the first item found (by match, or by the key field), else append.
  let found;
  if (has(op, "match")) {
    found = items.findIndex((item) => matches(item, op.match));
  } else {
    const key = has(op, "key") ? op.key : "id";
    if (!has(value, key)) throw fail("invalid-op", `upsertItem value has no "${key}" field to find the item by`);
    found = items.findIndex((item) => isObject(item) && has(item, key) && same(item[key], value[key]));
  }
  if (found < 0) return [...items, value];
  items[found] = value;
  return items;
}

function applyOne(current, op, index) {
  validate(op, index);
  const path = has(op, "path") ? op.path : "";
  const parts = tokens(path);
  if (parts.length === 0) return applyAt(current, op, index, "");
  if (current === MISSING) {
    throw new OperationError("path-missing", "the key holds nothing, so there is no member to change", { index, path });
  }
  const root = clone(current);
  let parent = root;
  for (let depth = 0; depth < parts.length - 1; depth++) {
    const at = pointer(parts.slice(0, depth + 1));
    parent = child(parent, parts[depth], index, at);
    if (parent === MISSING) throw new OperationError("path-missing", "this member does not exist", { index, path: at });
  }
  const last = parts[parts.length - 1];
  if (Array.isArray(parent)) {
    // Deleting what is not there ("-", or an index past the end) changes nothing; a token that
    // is no index is refused below like for any other op.
    if (op.op === "delete" && (last === "-" || (/^(0|[1-9][0-9]*)$/.test(last) && Number(last) >= parent.length))) return root;
    const position = arrayIndex(last, parent.length, index, path);
    const next = applyAt(parent[position], op, index, path);
    if (next === MISSING) parent.splice(position, 1);
    else parent[position] = next;
  } else if (isObject(parent)) {
    const next = applyAt(has(parent, last) ? parent[last] : MISSING, op, index, path);
    if (next === MISSING) delete parent[last];
    // An own property, as Python's dict has it: a plain assignment to "__proto__" would set the
    // prototype and drop the write.
    else Object.defineProperty(parent, last, { value: next, writable: true, enumerable: true, configurable: true });
  } else {
    throw new OperationError("path-missing", `the path goes through ${kindOf(parent)}, not an object or array`, {
      index,
      path: pointer(parts.slice(0, -1)),
    });
  }
  return root;
}

/**
 * Apply a list of operations to value (null: the key holds nothing); returns the new value (null
 * when the ops delete the record). Throws OperationError naming the failing op; never half-applies
 * and never changes value.
 */
export function applyOperations(value, operations) {
  if (!Array.isArray(operations) || operations.length === 0) {
    throw new OperationError("invalid-op", "the list of ops is empty");
  }
  let result = value === null || value === undefined ? MISSING : value;
  operations.forEach((op, index) => {
    result = applyOne(result, op, index);
  });
  return result === MISSING ? null : result;
}
