import { ConfigError } from "../errors.js";
import { IterableSource, connectorSource } from "./iterable/source.js";
import type { AckSource, CursorSource, Source, StreamConnector } from "./core/types.js";

export * from "./core/types.js";
export { IterableSource, NotReplayableError, connectorSource } from "./iterable/source.js";
export type { IterableCursor, IterableSourceOptions } from "./iterable/source.js";
export { CursorFnSource, type CursorFn, type CursorFnSourceOptions, type ResumableIterable } from "./iterable/cursor-fn-source.js";
export { SSEOffsetSource, type SSEOffsetSourceOptions } from "./sse/source.js";
export { FileSource, type FileCursor, type FileSourceOptions } from "./file/source.js";
export { FileReplacedError } from "./file/errors.js";
export {
  ConnectorClosedError,
  ConnectorNetworkError,
  ConnectorStallError,
  CursorBeyondEndError,
  CursorMismatchError,
  ListenError,
  SourceBusyError,
  SourceClosedError,
  SourceNotStartedError,
} from "./core/errors.js";
export { streamRunSettings, streamSourceKind, defaultCheckpoint, type StreamRunSettings } from "../python/stream/run-settings.js";
export { KafkaOffsetSource, KafkaConnectError, KafkaConsumerError, KafkaTopicError, type KafkaCursor, type KafkaPosition, type KafkaSourceOptions } from "./kafka/source.js";
export {
  WatermarkChunkSource,
  WatermarkOrderError,
  type WatermarkValue,
  type WatermarkPosition,
  type FetchChunk,
  type FetchChunkByPosition,
  type FetchMax,
  type FetchMaxByPosition,
  type WatermarkChunkSourceOptions,
  type WatermarkValueOptions,
  type WatermarkPositionOptions,
} from "./watermark/source.js";
export {
  postgresChunkFetcher,
  postgresWatermarkSource,
  quoteIdent,
  type SqlQueryable,
  type PostgresChunkFetcherOptions,
  type PostgresChunkFetcher,
  type PostgresWatermarkSourceOptions,
  type SettleMode,
} from "./watermark/postgres.js";

/** What StreamSink accepts as its source. */
export type SourceInput = Source | StreamConnector | Iterable<unknown> | AsyncIterable<unknown>;

function isObject(x: unknown): x is Record<string | symbol, unknown> {
  return typeof x === "object" && x !== null;
}

/**
 * Turn whatever the caller passed into a Source: a cursor or ack source as is, a connector with
 * `stream()` or a plain (async) iterable as a non-replayable IterableSource.
 */
export function toSource(input: SourceInput): Source {
  if (!isObject(input) && typeof input !== "function") {
    throw new ConfigError("source", `expected a source, a connector with stream(), or an iterable; got ${typeof input}`);
  }
  const obj = input as Record<string | symbol, unknown>;
  if (obj.kind === "cursor" && typeof obj.seek === "function" && typeof obj.read === "function") {
    return input as CursorSource;
  }
  if (obj.kind === "ack" && typeof obj.receive === "function" && typeof obj.ack === "function") {
    return input as AckSource;
  }
  if (typeof obj.stream === "function") return connectorSource(input as StreamConnector);
  if (typeof obj[Symbol.asyncIterator] === "function" || typeof obj[Symbol.iterator] === "function") {
    return new IterableSource(input as Iterable<unknown>);
  }
  throw new ConfigError(
    "source",
    "expected a cursor source (kind 'cursor' with seek/currentCursor/read), an ack source (kind 'ack' " +
      "with receive/ack), a connector with stream(), or an iterable of records",
  );
}
