import { exactLong } from "./avro.js";

/**
 * The part of a protobufjs reflection object this decoder uses. The types come from the schema
 * registry client's own protobufjs (it parses the registered `.proto`), so they are described
 * here rather than imported.
 */
interface ProtoReflection {
  readonly name: string;
  readonly parent: ProtoReflection | null;
  readonly nestedArray?: readonly ProtoReflection[];
}
interface ProtoType extends ProtoReflection {
  decode(bytes: Uint8Array): unknown;
  toObject(message: unknown, options: Record<string, unknown>): Record<string, unknown>;
}

const isType = (r: ProtoReflection): r is ProtoType =>
  typeof (r as Partial<ProtoType>).decode === "function" && "fields" in r;

/**
 * The message type that message `indexes` name, counted as Confluent counts them: the n-th
 * message declared at the top of the schema's file, then the n-th message nested in it, and so
 * on. `first` is the schema's first message as the registry client resolved it; its parent is
 * the file's package (or the root).
 */
export function messageType(first: unknown, indexes: readonly number[]): ProtoType | { error: string } {
  const start = first as ProtoType;
  if (!start || typeof start !== "object" || !isType(start)) return { error: "the registry client gave no protobuf message type for the schema" };
  let scope: ProtoReflection | null = start.parent;
  let found: ProtoType | undefined;
  for (const index of indexes) {
    const messages: ProtoType[] = (scope?.nestedArray ?? []).filter(isType);
    found = messages[index];
    if (!found) {
      return { error: `message index path [${indexes.join(", ")}] names no message in the schema (${messages.length} message(s) at that level)` };
    }
    scope = found;
  }
  return found ?? { error: "empty protobuf message index path" };
}

/**
 * A decoded message as a record: enums by name, bytes as base64, absent proto3 fields with their
 * default (proto3 does not tell "unset" from zero), and 64-bit integers exact: a number while it
 * fits, a bigint beyond 2^53.
 */
export function decodeMessage(type: ProtoType, bytes: Uint8Array): Record<string, unknown> {
  const message = type.decode(bytes);
  const object = type.toObject(message, { enums: String, bytes: String, defaults: true, arrays: true, objects: true });
  return exactLongs(object) as Record<string, unknown>;
}

interface LongLike {
  low: number;
  high: number;
  unsigned: boolean;
}

const isLongLike = (v: object): v is LongLike =>
  typeof (v as LongLike).low === "number" && typeof (v as LongLike).high === "number" && typeof (v as LongLike).unsigned === "boolean";

/** protobufjs gives 64-bit fields as Long objects (low and high 32 bits); replace them in place. */
function exactLongs(v: unknown): unknown {
  if (typeof v !== "object" || v === null) return v;
  if (isLongLike(v)) {
    const n = (BigInt(v.high >>> 0) << 32n) | BigInt(v.low >>> 0);
    return exactLong(v.unsigned ? n : BigInt.asIntN(64, n));
  }
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = exactLongs(v[i]);
    return v;
  }
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) o[k] = exactLongs(o[k]);
  return o;
}
