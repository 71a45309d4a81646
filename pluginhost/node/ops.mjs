// Operation-based plugin-data writes (ctx.pluginData.update). The handler tries the operations on
// the value it sees now, so a failing one (below min, not a list) throws right there and nothing is
// recorded; the operations themselves travel to Python and are applied again at commit.

export class OperationError extends Error {
  constructor(index, message) {
    super(`operation ${index}: ${message}`);
    this.name = "OperationError";
    this.code = "operation_failed";
    this.index = index;
  }
}

export const OPERATIONS = ["set", "merge", "inc", "append", "insert", "remove", "upsertItem", "delete"];

function parsePath(path) {
  if (path === undefined || path === null || path === "") return [];
  if (Array.isArray(path)) return path.map((p) => (typeof p === "number" ? p : String(p)));
  const text = String(path);
  const parts = text.startsWith("/") ? text.slice(1).split("/") : text.split(".");
  return parts.map((p) => p.replaceAll("~1", "/").replaceAll("~0", "~"));
}

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const clone = (v) => (v === undefined ? undefined : structuredClone(v));

function getAt(root, parts) {
  let node = root;
  for (const part of parts) {
    if (node === null || typeof node !== "object") return undefined;
    node = node[part];
  }
  return node;
}

function setAt(root, parts, value, index) {
  if (parts.length === 0) return value;
  const top = root === null || root === undefined ? {} : root;
  if (typeof top !== "object") throw new OperationError(index, "path goes through a value that is not an object");
  let node = top;
  for (let i = 0; i < parts.length - 1; i++) {
    const part = parts[i];
    if (node[part] === undefined || node[part] === null) node[part] = {};
    if (typeof node[part] !== "object") {
      throw new OperationError(index, `path goes through "${part}", which is not an object`);
    }
    node = node[part];
  }
  node[parts[parts.length - 1]] = value;
  return top;
}

function deleteAt(root, parts) {
  if (parts.length === 0) return null;
  const parent = getAt(root, parts.slice(0, -1));
  if (parent && typeof parent === "object") {
    const last = parts[parts.length - 1];
    if (Array.isArray(parent)) parent.splice(Number(last), 1);
    else delete parent[last];
  }
  return root;
}

function applyOne(value, op, index) {
  if (!isObject(op) || !OPERATIONS.includes(op.op)) {
    throw new OperationError(index, `unknown operation ${JSON.stringify(op?.op)}; use one of ${OPERATIONS.join(", ")}`);
  }
  const parts = parsePath(op.path);
  const current = getAt(value, parts);
  switch (op.op) {
    case "set":
      return setAt(value, parts, clone(op.value), index);
    case "delete":
      return deleteAt(value, parts);
    case "merge": {
      if (!isObject(op.value)) throw new OperationError(index, "merge needs an object value");
      if (current !== undefined && current !== null && !isObject(current)) {
        throw new OperationError(index, "merge target is not an object");
      }
      return setAt(value, parts, { ...(current ?? {}), ...clone(op.value) }, index);
    }
    case "inc": {
      const by = Number(op.by ?? 1);
      if (!Number.isFinite(by)) throw new OperationError(index, "inc needs a numeric by");
      if (current !== undefined && current !== null && typeof current !== "number") {
        throw new OperationError(index, "inc target is not a number");
      }
      const result = (current ?? 0) + by;
      if (op.min !== undefined && result < op.min) throw new OperationError(index, `result ${result} is below min ${op.min}`);
      if (op.max !== undefined && result > op.max) throw new OperationError(index, `result ${result} is above max ${op.max}`);
      return setAt(value, parts, result, index);
    }
    case "append":
    case "insert": {
      if (current !== undefined && current !== null && !Array.isArray(current)) {
        throw new OperationError(index, `${op.op} target is not a list`);
      }
      const list = [...(current ?? [])];
      const at = op.op === "insert" ? Number(op.index ?? 0) : list.length;
      if (!Number.isInteger(at) || at < 0 || at > list.length) throw new OperationError(index, `index ${op.index} is out of range`);
      list.splice(at, 0, clone(op.value));
      return setAt(value, parts, list, index);
    }
    case "remove": {
      if (!Array.isArray(current)) throw new OperationError(index, "remove target is not a list");
      const key = op.key ?? "id";
      let at = -1;
      if (op.index !== undefined) at = Number(op.index);
      else if (op.id !== undefined) at = current.findIndex((item) => isObject(item) && item[key] === op.id);
      else at = current.findIndex((item) => JSON.stringify(item) === JSON.stringify(op.value));
      if (at < 0 || at >= current.length) throw new OperationError(index, "remove found no such item");
      const list = [...current];
      list.splice(at, 1);
      return setAt(value, parts, list, index);
    }
    case "upsertItem": {
      if (current !== undefined && current !== null && !Array.isArray(current)) {
        throw new OperationError(index, "upsertItem target is not a list");
      }
      const key = op.key ?? "id";
      if (!isObject(op.value) || op.value[key] === undefined) {
        throw new OperationError(index, `upsertItem needs an object value with "${key}"`);
      }
      const list = [...(current ?? [])];
      const at = list.findIndex((item) => isObject(item) && item[key] === op.value[key]);
      if (at >= 0) list[at] = { ...list[at], ...clone(op.value) };
      else list.push(clone(op.value));
      return setAt(value, parts, list, index);
    }
  }
  return value;
}

/** Apply a list of operations to a copy of value; throws OperationError, never half-applies. */
export function applyOperations(value, operations) {
  if (!Array.isArray(operations) || operations.length === 0) {
    throw new OperationError(0, "update needs a non-empty list of operations");
  }
  let result = clone(value) ?? null;
  operations.forEach((op, index) => {
    result = applyOne(result, op, index);
  });
  return result;
}
