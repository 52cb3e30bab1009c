/**
 * Avro `long`s without lost digits. avsc reads a long as a JavaScript number and throws
 * ("potential precision loss") beyond 2^53, which would quarantine a valid record. This long type
 * gives a number while it is exact and a bigint beyond (the engine and the lake store both as
 * 64-bit integers), so every digit survives.
 */
interface AvscLongFactory {
  types: { LongType: { __with(methods: Record<string, unknown>): unknown } };
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** A long as a number when exact, else a bigint. */
export function exactLong(n: bigint): number | bigint {
  return n <= MAX_SAFE && n >= -MAX_SAFE ? Number(n) : n;
}

function toBigInt(v: unknown): bigint {
  if (typeof v === "bigint") return v;
  if (typeof v === "number" && Number.isSafeInteger(v)) return BigInt(v);
  if (typeof v === "string" && /^-?\d+$/.test(v)) return BigInt(v);
  throw new Error(`not an Avro long: ${String(v)}`);
}

function isLong(v: unknown): boolean {
  if (typeof v === "bigint") return v >= -(2n ** 63n) && v < 2n ** 63n;
  return typeof v === "number" && Number.isSafeInteger(v);
}

/** avsc's `forSchema` options (for the registry client) that read every `long` exactly. */
export function exactLongOptions(avsc: AvscLongFactory): { typeHook: (schema: unknown) => unknown } {
  const longType = avsc.types.LongType.__with({
    // avsc hands over the 8 bytes little-endian, two's complement.
    fromBuffer: (buf: Buffer) => exactLong(buf.readBigInt64LE(0)),
    toBuffer: (v: unknown) => {
      const buf = Buffer.alloc(8);
      buf.writeBigInt64LE(toBigInt(v));
      return buf;
    },
    fromJSON: (v: unknown) => exactLong(toBigInt(v)),
    toJSON: (v: unknown) => (typeof v === "bigint" ? v.toString() : v),
    isValid: isLong,
    compare: (a: unknown, b: unknown) => {
      const x = toBigInt(a);
      const y = toBigInt(b);
      return x < y ? -1 : x > y ? 1 : 0;
    },
  });
  return {
    typeHook: (schema: unknown) => {
      if (schema === "long") return longType;
      if (typeof schema === "object" && schema !== null && (schema as { type?: unknown }).type === "long") return longType;
      return undefined;
    },
  };
}

/**
 * avsc gives records as instances of a class per record type; a record reaches the contract as a
 * plain object (nested records too). Bytes and fixed values stay bytes.
 */
export function plainAvro(v: unknown): unknown {
  if (typeof v !== "object" || v === null || v instanceof Uint8Array) return v;
  if (Array.isArray(v)) return v.map(plainAvro);
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[k] = plainAvro(x);
  return out;
}
