import { isUtf8 } from "node:buffer";
import type { KafkaMessage } from "./message.js";
import { jsonDecoder, type PayloadDecoder } from "../core/decoders/index.js";
import type { SourceRecord } from "../core/types.js";

/** Where a Kafka record sits; kept with quarantined rows. */
export interface KafkaPosition {
  topic: string;
  partition: number;
  offset: number;
}

/** What a tombstone (a null value) becomes: a quarantined record, or a delete of its key. */
export type Tombstones = "quarantine" | "delete";

/** The records of one fetched batch from offset `from` up to (not including) `end`. */
export function sliceBatch(
  topic: string,
  partition: number,
  messages: readonly KafkaMessage[],
  from: number,
  end: number,
  decoder: PayloadDecoder = jsonDecoder,
  tombstones: Tombstones = "quarantine",
): { records: SourceRecord[]; offsets: number[]; bytes: number } {
  const records: SourceRecord[] = [];
  const offsets: number[] = [];
  let bytes = 0;
  for (const m of messages) {
    const offset = Number(m.offset);
    if (offset < from) continue; // already buffered or yielded (a refetch after a rebalance)
    if (offset >= end) break; // I7: beyond the snapshot, for the next run
    records.push(toRecord(topic, partition, offset, m, decoder, tombstones));
    offsets.push(offset);
    bytes += (m.value?.length ?? 0) + (m.key?.length ?? 0);
  }
  return { records, offsets, bytes };
}

/**
 * Fetch what the decoder needs for a fetched batch (schemas by id, for decoder: avro / protobuf)
 * before `sliceBatch` decodes it; the error when that failed (the registry is unreachable).
 */
export async function prepareValues(decoder: PayloadDecoder, messages: readonly KafkaMessage[]): Promise<Error | undefined> {
  if (!decoder.prepare) return undefined;
  try {
    await decoder.prepare?.(messages.map((m) => m.value));
    return undefined;
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

/** One message as a record: its decoded value, or a decode error with the exact bytes (I6). */
export function toRecord(
  topic: string,
  partition: number,
  offset: number,
  m: KafkaMessage,
  decoder: PayloadDecoder = jsonDecoder,
  tombstones: Tombstones = "quarantine",
): SourceRecord {
  const position: KafkaPosition = { topic, partition, offset };
  // Topic, partition and offset are in `position`; meta carries the rest of the envelope.
  const meta: Record<string, unknown> = { timestamp: Number(m.timestamp) };
  const textKey = m.key ? isUtf8(m.key) : true;
  if (m.key) meta.key = textKey ? m.key.toString("utf8") : m.key.toString("base64");
  const headers = m.headers;
  if (headers && Object.keys(headers).length > 0) meta.headers = headerStrings(headers);
  const bytes = m.value?.length ?? 0;
  const envelope = (): Record<string, unknown> => {
    const e: Record<string, unknown> = { key: meta.key ?? null, ...(textKey ? {} : { keyEncoding: "base64" }) };
    if (meta.headers) e.headers = meta.headers;
    e.timestamp = meta.timestamp;
    return e;
  };
  if (m.value === null && tombstones === "delete") {
    // The key's row goes; should the key not make a primary key, the batch quarantines it with this.
    return { value: undefined, raw: new Uint8Array(0), delete: { key: m.key ?? null }, position, bytes: m.key?.length ?? 0, meta, envelope: envelope() };
  }
  const decoded = decoder.decode(m.value, KAFKA_VALUE);
  if ("error" in decoded) {
    // Keep the exact bytes (quarantine stores them base64) so the message can be inspected or
    // replayed, with its key and headers: a tombstone's key is the delete itself.
    return { value: undefined, raw: m.value ?? new Uint8Array(0), decodeError: decoded.error, position, bytes, meta, envelope: envelope() };
  }
  return { value: decoded.value, position, bytes, meta };
}

/** A Kafka record's payload is its `value`; a null one is a tombstone. */
const KAFKA_VALUE = { name: "value", missing: "message has no value (a tombstone)" };

function headerStrings(headers: Record<string, unknown>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const str = (v: unknown) => (Buffer.isBuffer(v) ? v.toString("utf8") : String(v));
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    out[k] = Array.isArray(v) ? v.map(str) : str(v);
  }
  return out;
}
