// The realm wall: after the host's own modules are loaded and before any plugin module is, every
// shared intrinsic (Object.prototype, Function.prototype, Array.prototype, Promise, Error, …), the
// allowed built-in modules (events, buffer, crypto, util, …) and the prototypes of the host's own
// objects (its channel socket's net.Socket / stream / EventEmitter chain, timers, AbortSignal,
// AsyncLocalStorage) are frozen, and every global binding is made read-only. A plugin that patches
// EventEmitter.prototype.emit (or any other shared prototype) then fails or changes only its own
// objects: it never gets code running with one of the host's objects as `this`.
//
// Freezing a prototype breaks the common pattern of giving an instance its own value for a name
// the prototype also defines (`this._events = …` in Node's EventEmitter, `error.message = …`):
// assigning to an inherited read-only property throws. Such data properties are turned into an
// accessor pair whose setter gives the instance its own property (the "override mistake" repair).
// For the JavaScript intrinsics only the names that instances commonly shadow are repaired, so
// V8's fast paths (array iteration, promise then, species) keep their protectors.
//
// COVEL_HOST_FREEZE=0 leaves the realm open; only the tests that show each wall alone use it.

// Data properties of these intrinsic prototypes that plain objects, functions and errors are often
// given their own value for.
const SHADOWED = {
  Object: ["constructor", "toString", "toLocaleString", "valueOf", "hasOwnProperty", "isPrototypeOf", "propertyIsEnumerable", "toJSON"],
  Function: ["constructor", "toString", "bind", "call", "apply"],
  Error: ["constructor", "name", "message", "toString", "stack"],
};
// Methods Node's own code gives an instance its own copy of: net's `this.write = writeAfterFIN`,
// a stream's `this._read = options.read`. These stay assignable on instances.
const NODE_SHADOWED = ["write", "end", "destroy", "read", "_read", "_write", "_writev", "_final", "_destroy", "_construct", "_transform", "_flush"];
const ERROR_NAMES = ["Error", "EvalError", "RangeError", "ReferenceError", "SyntaxError", "TypeError", "URIError", "AggregateError"];

const { defineProperty, freeze, getOwnPropertyDescriptor, getPrototypeOf, isFrozen, hasOwn } = Object;
const ownKeys = Reflect.ownKeys;

function repairData(target, key) {
  const desc = getOwnPropertyDescriptor(target, key);
  if (!desc || !("value" in desc) || !desc.writable || !desc.configurable) return;
  const value = desc.value;
  defineProperty(target, key, {
    get() {
      return value;
    },
    set(replacement) {
      if (this === target) throw new TypeError(`Cannot assign to read only property '${String(key)}' of a frozen prototype`);
      if (this === null || (typeof this !== "object" && typeof this !== "function")) return;
      if (hasOwn(this, key)) {
        this[key] = replacement;
        return;
      }
      defineProperty(this, key, { value: replacement, writable: true, enumerable: true, configurable: true });
    },
    enumerable: desc.enumerable,
    configurable: false,
  });
}

/**
 * Freeze a prototype, except a data property that is already non-configurable but writable and
 * holds a plain value (Node defines EventEmitter.prototype[kCapture] so, and every new emitter
 * assigns its own): it can be neither frozen without breaking instances nor repaired, and a
 * boolean or number runs no code with anyone's object as `this`.
 */
function freezePrototype(proto) {
  for (const key of ownKeys(proto)) {
    const desc = getOwnPropertyDescriptor(proto, key);
    if (!desc) continue;
    if ("value" in desc && desc.writable && !desc.configurable && !isObjectLike(desc.value)) continue;
    if ("value" in desc) defineProperty(proto, key, { writable: false, configurable: false });
    else defineProperty(proto, key, { configurable: false });
  }
  Object.preventExtensions(proto);
}

function isObjectLike(value) {
  return value !== null && (typeof value === "object" || typeof value === "function");
}

/**
 * Freeze everything reachable from the roots as shared code: functions (and their statics),
 * prototypes (and their methods), namespace objects. `instances` are objects whose state must
 * stay writable (process, the channel socket): only their prototype chains are frozen.
 * `intrinsicPrototypes` are the JavaScript engine's prototypes: only the SHADOWED names there
 * are repaired. Returns how many objects were frozen.
 */
export function freezeShared({ roots, instances, intrinsicPrototypes, keepOpen }) {
  const seen = new Set();
  const prototypes = new Set();
  const queue = [];
  const add = (value) => {
    if (!isObjectLike(value) || seen.has(value) || keepOpen.has(value)) return;
    seen.add(value);
    queue.push(value);
  };
  const addPrototype = (value) => {
    if (!isObjectLike(value)) return;
    prototypes.add(value);
    add(value);
  };
  for (const root of roots) add(root);
  for (const instance of instances) {
    for (let proto = getPrototypeOf(instance); proto; proto = getPrototypeOf(proto)) addPrototype(proto);
  }
  while (queue.length) {
    const object = queue.pop();
    // A class's [[Prototype]] is its parent class (SuppressedError's is Error): frozen, never
    // repaired, since V8 reads statics such as Error.stackTraceLimit only as data properties.
    const parent = getPrototypeOf(object);
    if (typeof parent === "function") add(parent);
    else addPrototype(parent);
    for (const key of ownKeys(object)) {
      let desc;
      try {
        desc = getOwnPropertyDescriptor(object, key);
      } catch {
        continue;
      }
      if (!desc) continue;
      if ("value" in desc) {
        if (key === "prototype" && typeof object === "function") addPrototype(desc.value);
        else add(desc.value);
      } else {
        add(desc.get);
        add(desc.set);
      }
    }
  }
  const intrinsic = new Map(); // prototype -> the names repaired on it
  for (const [proto, names] of intrinsicPrototypes) intrinsic.set(proto, names);
  for (const proto of prototypes) {
    if (isFrozen(proto)) continue;
    const names = intrinsic.get(proto);
    if (names) {
      for (const key of names) repairData(proto, key);
      continue;
    }
    if (intrinsicPrototypes.allOthers.has(proto)) continue; // engine prototypes: protectors stay
    // Node's own prototypes: the plain values instances take their own copies of (`_events`),
    // and the names every object may shadow; methods stay data properties, which V8 reads
    // far faster than accessors on every call.
    for (const key of ownKeys(proto)) {
      const desc = getOwnPropertyDescriptor(proto, key);
      if (desc && "value" in desc && typeof desc.value === "function" && !SHADOWED.Object.includes(key) && !NODE_SHADOWED.includes(key)) continue;
      repairData(proto, key);
    }
  }
  let frozen = 0;
  for (const object of seen) {
    if (isFrozen(object)) continue;
    try {
      if (prototypes.has(object)) freezePrototype(object);
      else freeze(object);
      frozen += 1;
    } catch {
      // an exotic object (a module namespace being evaluated) that cannot be frozen
    }
  }
  return frozen;
}

/** The engine's own prototypes that plain property lookups reach, besides the globals'. */
function hiddenIntrinsics() {
  const of = (value) => getPrototypeOf(value);
  const found = [
    of(function* generator() {}),
    of(async function asyncFn() {}),
    of(async function* asyncGenerator() {}),
    of(of(function* generator() {}).prototype),
    of([][Symbol.iterator]()),
    of(new Map()[Symbol.iterator]()),
    of(new Set()[Symbol.iterator]()),
    of(""[Symbol.iterator]()),
    of("a".matchAll(/a/g)),
    of(of([][Symbol.iterator]())),
    of(Int8Array),
    of(Int8Array.prototype),
  ];
  // %ThrowTypeError% and friends are reached through accessors of the roots.
  return found.filter(isObjectLike);
}

/** Make every global binding read-only (after reading it, so Node's lazy getters settle). */
function lockGlobals(keepWritable) {
  for (const key of ownKeys(globalThis)) {
    if (keepWritable.has(key)) continue;
    const desc = getOwnPropertyDescriptor(globalThis, key);
    if (!desc || !desc.configurable) continue;
    if ("value" in desc) {
      defineProperty(globalThis, key, { value: desc.value, writable: false, enumerable: desc.enumerable, configurable: false });
      continue;
    }
    let value;
    try {
      value = globalThis[key];
    } catch {
      continue;
    }
    defineProperty(globalThis, key, { value, writable: false, enumerable: desc.enumerable, configurable: false });
  }
}

/**
 * `process` keeps its writable state (exitCode, env), but not its methods: Node's streams call
 * process.nextTick(fn, stream) with the host's own socket, so a replaced nextTick (or an own
 * `emit` shadowing EventEmitter's) would be handed it. Each function-valued property, and the
 * EventEmitter methods Node calls on process, become read-only own properties.
 */
function lockProcessMethods() {
  for (const key of ownKeys(process)) {
    const desc = getOwnPropertyDescriptor(process, key);
    if (!desc || !desc.configurable || !("value" in desc) || typeof desc.value !== "function") continue;
    defineProperty(process, key, { value: desc.value, writable: false, enumerable: desc.enumerable, configurable: false });
  }
  for (const key of ["emit", "on", "addListener", "prependListener", "once", "prependOnceListener", "removeListener", "off", "listeners", "rawListeners", "listenerCount"]) {
    if (hasOwn(process, key)) continue;
    defineProperty(process, key, { value: process[key], writable: false, enumerable: false, configurable: false });
  }
}

/**
 * Freeze the realm. modules: the namespaces of the built-ins plugins may import (and the ones
 * whose classes the host's objects are made of); instances: the host's live objects whose
 * prototypes must not be patched. Returns a summary for the ready frame.
 */
export function freezeRealm({ modules, instances }) {
  const globals = ownKeys(globalThis)
    .map((key) => {
      try {
        return globalThis[key];
      } catch {
        return undefined;
      }
    })
    .filter(isObjectLike);
  const stateful = new Set([globalThis, process, process.env]);
  const roots = [];
  const live = [...instances, process];
  for (const value of globals) {
    if (stateful.has(value)) continue;
    // A global whose prototype is Object.prototype (Math, JSON, Reflect, Intl, console) is a
    // namespace; any other global object (performance, navigator, crypto) is an instance.
    if (typeof value === "function" || getPrototypeOf(value) === Object.prototype || getPrototypeOf(value) === null) roots.push(value);
    else live.push(value);
  }
  for (const namespace of modules) {
    for (const key of ownKeys(namespace)) {
      const value = namespace[key];
      if (isObjectLike(value) && !stateful.has(value)) roots.push(value);
    }
  }
  roots.push(...hiddenIntrinsics());
  // process's own methods are shared code too (process itself keeps its writable state).
  for (const key of ownKeys(process)) {
    const desc = getOwnPropertyDescriptor(process, key);
    if (desc && "value" in desc && typeof desc.value === "function") roots.push(desc.value);
  }
  const intrinsicPrototypes = new Map();
  intrinsicPrototypes.set(Object.prototype, SHADOWED.Object);
  intrinsicPrototypes.set(Function.prototype, SHADOWED.Function);
  for (const name of ERROR_NAMES) if (globalThis[name]) intrinsicPrototypes.set(globalThis[name].prototype, SHADOWED.Error);
  // Every other prototype the engine defines keeps its data properties as they are.
  const engine = new Set(hiddenIntrinsics());
  for (const name of ["Array", "Promise", "Map", "Set", "WeakMap", "WeakSet", "WeakRef", "RegExp", "String", "Number", "Boolean", "Symbol", "BigInt", "Date", "ArrayBuffer", "SharedArrayBuffer", "DataView", "FinalizationRegistry", "Iterator", "Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array", "Float16Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array"]) {
    const ctor = globalThis[name];
    if (typeof ctor === "function" && ctor.prototype) engine.add(ctor.prototype);
  }
  intrinsicPrototypes.allOthers = engine;
  const frozen = freezeShared({ roots, instances: live, intrinsicPrototypes, keepOpen: stateful });
  lockGlobals(new Set());
  lockProcessMethods();
  return { frozen };
}
