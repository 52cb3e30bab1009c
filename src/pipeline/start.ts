/**
 * What a stream says when it starts: where it reads, from which cursor, and where it writes. The
 * same facts for `lakelogic run` (StreamSink's `onStart`) and for a worker opening a stream.
 */
import type { Cursor } from "../checkpoint/types.js";
import type { LakeFormat } from "../contract/types.js";
import { describeTarget, resolveLakeConfig } from "../lake/index.js";
import type { LogFields } from "../observe/logger.js";
import type { Source } from "../sources/core/types.js";
import { jsonText } from "../util/exact-json.js";
import { redactText } from "../util/redact.js";
import type { StreamMode, StreamSettings } from "./settings.js";

export interface StreamStart {
  checkpointKey: string;
  mode: StreamMode;
  /** The source's type and identity, without credentials: `file events.ndjson`, `kafka orders`, `sqs https://…/orders`. */
  source: string;
  /** The committed cursor the stream goes on from; null when it starts from the beginning. */
  resumedFrom: Cursor;
  /** The last committed batch (0: none yet). */
  batchId: number;
  /** The lake table: its format, name, and where it is (a directory, an object-store URI, a DuckLake catalog). */
  target: { format: LakeFormat; table: string; location: string };
  /** Where the cursor is kept: a file or URI, `target` (in the lake's own commit) or `memory`. */
  checkpoint: string;
}

/** The start of a stream whose source is open at `position`. */
export function streamStart(settings: StreamSettings, source: Pick<Source, "description">, position: { cursor: Cursor | undefined; batchId: number }): StreamStart {
  const { checkpoint } = settings;
  return {
    checkpointKey: settings.key,
    mode: settings.mode,
    source: source.description,
    resumedFrom: position.cursor ?? null,
    batchId: position.batchId,
    target: describeTarget(resolveLakeConfig(settings.contract, { targetPath: settings.targetPath })),
    checkpoint: typeof checkpoint === "string" ? redactText(checkpoint) : checkpoint.constructor.name,
  };
}

/** The fields of the `stream started` log line. */
export function startFields(start: StreamStart): LogFields {
  return {
    key: start.checkpointKey,
    mode: start.mode,
    source: start.source,
    cursor: jsonText(start.resumedFrom) ?? "null",
    batch: start.batchId,
    format: start.target.format,
    table: start.target.table,
    target: start.target.location,
    checkpoint: start.checkpoint,
  };
}
