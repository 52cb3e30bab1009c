/**
 * Typed JSON for cursors. Plain JSON loses bigint (throws), Date (becomes a string that no longer
 * compares as a date) and undefined; the Python original failed on date and decimal cursors
 * *after* the data was written. Here every such value is tagged and comes back as itself:
 *
 *   123n            → {"$bigint":"123"}
 *   new Date(…)     → {"$date":"2024-01-01T00:00:00.000Z"}
 *   undefined       → {"$undefined":true}        (top level or array item; object keys are dropped, as in JSON)
 *   NaN / ±Infinity → {"$number":"NaN"}
 *   {"$bigint":…}   → {"$object":{"$bigint":…}}  (a user object whose keys start with "$" is escaped)
 *
 * Decimal strings are strings and stay strings. Anything else that JSON cannot represent faithfully
 * (functions, symbols, Map, Set, class instances, cycles) is refused with a TypeError at encode
 * time, so a bad cursor fails before anything is committed.
 */

const TAGS = new Set(["$bigint", "$date", "$undefined", "$number", "$object"]);

export function encodeCursor(value: unknown): string {
  return JSON.stringify(toTagged(value, [], "cursor"));
}

export function decodeCursor(text: string): unknown {
  return fromTagged(JSON.parse(text) as unknown);
}

function toTagged(value: unknown, stack: object[], path: string): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      return Number.isFinite(value) ? value : { $number: String(value) };
    case "bigint":
      return { $bigint: value.toString() };
    case "undefined":
      return { $undefined: true };
    case "object": {
      if (value === null) return null;
      if (value instanceof Date) {
        if (Number.isNaN(value.getTime())) throw new TypeError(`${path}: invalid Date cannot be encoded`);
        return { $date: value.toISOString() };
      }
      if (stack.includes(value)) throw new TypeError(`${path}: circular reference`);
      stack.push(value);
      try {
        if (Array.isArray(value)) return value.map((item, i) => toTagged(item, stack, `${path}[${i}]`));
        const proto = Object.getPrototypeOf(value) as unknown;
        if (proto !== Object.prototype && proto !== null) {
          const name = (value as { constructor?: { name?: string } }).constructor?.name ?? "object";
          throw new TypeError(`${path}: a ${name} cannot be encoded as a cursor; use plain objects, arrays, strings, numbers, bigint or Date`);
        }
        const out: Record<string, unknown> = {};
        let escape = false;
        for (const [k, v] of Object.entries(value)) {
          if (v === undefined) continue; // as JSON: an absent key and an undefined key mean the same
          if (k.startsWith("$")) escape = true;
          setOwn(out, k, toTagged(v, stack, `${path}.${k}`));
        }
        return escape ? { $object: out } : out;
      } finally {
        stack.pop();
      }
    }
    default:
      throw new TypeError(`${path}: a ${typeof value} cannot be encoded as a cursor`);
  }
}

function fromTagged(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(fromTagged);
  if (value === null || typeof value !== "object") return value;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj);
  if (keys.length === 1 && TAGS.has(keys[0]!)) {
    const tag = keys[0]!;
    const v = obj[tag];
    switch (tag) {
      // Only what encodeCursor writes: anything else would come back as a different value
      // (Invalid Date, NaN) instead of failing.
      case "$bigint":
        if (typeof v === "string" && /^-?\d+$/.test(v)) return BigInt(v);
        break;
      case "$date":
        if (typeof v === "string" && !Number.isNaN(Date.parse(v))) return new Date(v);
        break;
      case "$undefined":
        return undefined;
      case "$number":
        if (v === "NaN" || v === "Infinity" || v === "-Infinity") return Number(v);
        break;
      case "$object":
        if (v !== null && typeof v === "object" && !Array.isArray(v)) return decodeEntries(v as Record<string, unknown>);
        break;
    }
    throw new TypeError(`decodeCursor: malformed ${tag} value ${JSON.stringify(v)}`);
  }
  return decodeEntries(obj);
}

function decodeEntries(obj: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) setOwn(out, k, fromTagged(v));
  return out;
}

/** Plain assignment of "__proto__" would change the prototype instead of adding a key. */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
