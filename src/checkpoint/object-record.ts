import { encodeCursor } from "./codec.js";
import { CheckpointObjectDamagedError } from "./object-errors.js";
import { decodeStoredCursor } from "./stored-cursor.js";
import type { CheckpointRecord, Counts } from "./types.js";

/**
 * One checkpoint as one small JSON object, readable by an operator:
 *
 *   {"format":"lakelogic.checkpoint","version":1,"key":"stream::orders","batchId":3,
 *    "committedAt":"2026-01-01T00:00:03.000Z","writerId":"run-1",
 *    "batch":{"sourceCount":10,…},"totals":{"sourceCount":30,…},"cursor":{"offset":{"$bigint":"42"}}}
 *
 * The cursor is the typed JSON of `encodeCursor`, embedded as a value (so bigint, Date and decimal
 * strings survive). `batch` and `totals` are written whole, every key they have, so a count added
 * to `Counts` later round-trips without a format change.
 */
const FORMAT = "lakelogic.checkpoint";
const VERSION = 1;
const REQUIRED_COUNTS = ["sourceCount", "goodCount", "badCount", "supersededCount"] as const;

export function encodeRecord(record: CheckpointRecord): Uint8Array {
  const body = {
    format: FORMAT,
    version: VERSION,
    key: record.key,
    batchId: record.batchId,
    committedAt: record.committedAt.toISOString(),
    writerId: record.writerId,
    batch: { ...record.batch },
    totals: { ...record.totals },
    cursor: JSON.parse(encodeCursor(record.cursor)) as unknown,
  };
  return new TextEncoder().encode(JSON.stringify(body));
}

/** The record stored for `key`; a damaged or foreign object fails naming the object, never guessed at. */
export function decodeRecord(bytes: Uint8Array, key: string, where: string): CheckpointRecord {
  const damaged = (detail: string, cause?: unknown) => new CheckpointObjectDamagedError(where, key, detail, { cause });
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (err) {
    throw damaged("it is not JSON", err);
  }
  if (!isObject(body)) throw damaged("it is not a JSON object");
  if (body.format !== FORMAT || body.version !== VERSION) {
    throw damaged(`expected "format": "${FORMAT}", "version": ${VERSION}; found ${JSON.stringify(body.format)}, ${JSON.stringify(body.version)}`);
  }
  if (body.key !== key) throw damaged(`it holds the checkpoint of key ${JSON.stringify(body.key)}`);
  const { batchId, committedAt, writerId } = body;
  if (typeof batchId !== "number" || !Number.isSafeInteger(batchId) || batchId < 1) throw damaged(`"batchId" must be a positive integer`);
  if (typeof committedAt !== "string" || Number.isNaN(Date.parse(committedAt))) throw damaged(`"committedAt" must be an ISO date-time`);
  if (typeof writerId !== "string") throw damaged(`"writerId" must be a string`);
  if (!("cursor" in body)) throw damaged(`"cursor" is missing`);
  return {
    key,
    cursor: decodeStoredCursor(JSON.stringify(body.cursor), key, where),
    batchId,
    committedAt: new Date(committedAt),
    batch: countsOf(body.batch, "batch", damaged),
    totals: countsOf(body.totals, "totals", damaged),
    writerId,
  };
}

function countsOf(value: unknown, field: string, damaged: (detail: string) => Error): Counts {
  if (!isObject(value)) throw damaged(`"${field}" must be an object of counts`);
  for (const [name, n] of Object.entries(value)) {
    if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0) throw damaged(`"${field}.${name}" must be a count (a whole number >= 0)`);
  }
  for (const name of REQUIRED_COUNTS) {
    if (!(name in value)) throw damaged(`"${field}.${name}" is missing`);
  }
  // Every key, not only the known ones: counts added later must survive a round trip.
  return { ...value } as unknown as Counts;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
