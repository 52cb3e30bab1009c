import type { Cursor } from "../../checkpoint/types.js";

/**
 * One record as a source hands it over. `value` is the decoded event; when decoding failed,
 * `decodeError` says why and `raw` keeps the payload, and the sink quarantines it (I6).
 */
export interface SourceRecord {
  value: unknown;
  /** The payload as received (text, or bytes kept as base64 in quarantine). */
  raw?: string | Uint8Array;
  decodeError?: string;
  /** Where the record sits in its source (offset, event id, row key): kept with quarantined rows. */
  position?: unknown;
  /** Approximate size for byte-based batch cuts; measured from `raw` or the JSON when absent. */
  bytes?: number;
  /** Transport metadata (headers, attributes), kept for the caller. */
  meta?: Record<string, unknown>;
  /**
   * A record that failed to decode: what the transport knows of the message besides its payload
   * and position (a Kafka message's key and headers), kept in quarantine (its `record` column).
   * A function of the position, so it takes no part in the quarantine row's identity.
   */
  envelope?: Record<string, unknown>;
  /**
   * Set on a record that deletes its key's row from the target (a Kafka tombstone under
   * `tombstones: delete`); `value` is then undefined. The key is turned into the primary-key
   * fields by the batch (src/pipeline/deletes.ts).
   */
  delete?: { key: Uint8Array | null };
}

export type RunMode = "available_now" | "continuous";

export interface ReadOptions {
  mode: RunMode;
  signal: AbortSignal;
}

/** Lag as far as the source can tell it. */
export interface SourceLag {
  /** Records (or messages) not yet read. */
  records?: number;
  /** Bytes not yet read (file sources). */
  bytes?: number;
  /** Age in ms of the oldest unread record. */
  oldestAgeMs?: number;
}

/**
 * What waits to be read right after the records handed out so far, as far as the source knows it
 * without a round trip to its server (an estimate). A batch grows while a batch's worth more waits
 * (src/pipeline/growth.ts).
 */
export interface SourceBacklog {
  /** Records waiting (Kafka: the high watermarks of the last fetch less the cursor). */
  records?: number;
  /** Bytes waiting (a file: its size, or a drain's end, less the cursor's offset). */
  bytes?: number;
  /** The source cannot count what waits but its last page came back full: more follows at once (a keyset backfill). */
  pageFull?: boolean;
}

/**
 * A source with a native, replayable position. The sink seeks to the committed cursor, reads,
 * and after each commit stores `currentCursor()` — which must describe exactly the records
 * yielded so far, never records that were prefetched but not yet yielded.
 */
export interface CursorSource {
  readonly kind: "cursor";
  /** Short description for messages, e.g. `kafka orders`. */
  readonly description: string;
  /**
   * True when `seek(cursor)` gives back every record after `cursor`, in the same order, every
   * time, and no other stream reads the same records (files, keyset-paged tables, replayable
   * iterables). The lake then replaces the quarantine rows of a batch that never committed
   * instead of looking up every stored row (docs/lake.md, "Quarantine"). Leave it unset when a
   * resumed source may skip or reorder records (a live feed) or hand them to another stream (a
   * Kafka consumer group).
   */
  readonly replays?: boolean;
  /**
   * The run modes this source can serve; absent means both. A source that only receives what is
   * pushed to it while it runs (a webhook endpoint) has no backlog to drain and no end to stop
   * at: it declares `["continuous"]`, and an `available_now` run is refused when it starts
   * instead of listening for a moment and calling that a drain.
   */
  readonly modes?: readonly RunMode[];
  /** Shorthand for `modes: ["continuous"]`: a source that never reaches an end (the Python `continuous_only`). */
  readonly continuousOnly?: boolean;
  /**
   * True when the source yields records that delete a key (`SourceRecord.delete`): it runs only
   * into a merge target with a primary key, refused at start otherwise.
   */
  readonly deletes?: boolean;
  seek(cursor: Cursor | undefined): Promise<void>;
  currentCursor(): Cursor | undefined;
  /**
   * Capture the end snapshot for `available_now` (I7). After it is called, `read` ends at
   * the snapshot. Sources without it end `available_now` when `read` is exhausted.
   * Called with a snapshot, the source adopts it instead of capturing a new one: the Temporal
   * runtime captures the end once per drain and hands it to whichever worker reads next.
   */
  endCursor?(snapshot?: Cursor): Promise<Cursor | undefined>;
  read(options: ReadOptions): AsyncIterable<SourceRecord>;
  /** How far `cursor` is from the start towards `end` (0..1), for progress bars; when computable. */
  progress?(cursor: Cursor, end: Cursor): number | undefined;
  /** Called after each commit with the committed cursor (e.g. Kafka group commit). */
  committed?(cursor: Cursor): Promise<void>;
  lag?(): Promise<SourceLag | undefined>;
  /**
   * What waits after the records handed out so far (SourceBacklog), asked after each batch is
   * cut: while a batch's worth more waits, the next batch may grow (docs/streamsink.md, "Batch
   * size"). Cheap: no round trip to a server. Absent: batches keep their base size.
   */
  backlog?(): SourceBacklog | undefined | Promise<SourceBacklog | undefined>;
  close?(): Promise<void>;
}

/**
 * Optional on the iterator that `CursorSource.read()` returns: the next record when it is already
 * at hand (e.g. the next line of a chunk the source has read), taken without a promise, or
 * undefined when getting it needs a wait (then `next()`). A batch collector takes records this
 * way while it can, so a chunk's records cost no promise each. It must yield exactly what `next()`
 * would, in the same order, and `currentCursor()` must describe the records taken so far.
 */
export interface BufferedRecordIterator extends AsyncIterator<SourceRecord> {
  takeBuffered(): SourceRecord | undefined;
}

export interface ReceivedRecord<Token = unknown> extends SourceRecord {
  ackToken: Token;
  /**
   * When the broker accepted the message (ms since the epoch, the broker's clock), if it says.
   * An available_now run leaves messages produced after it started for the next run (I7).
   */
  producedAt?: number;
}

/** A queue: messages are leased, then acknowledged only after the batch is committed (I8). */
export interface AckSource<Token = unknown> {
  readonly kind: "ack";
  readonly description: string;
  /**
   * The run modes this source can serve; absent means both. A source that only receives what is
   * pushed to it while it runs (a webhook endpoint) has no backlog to drain and no end to stop
   * at: it declares `["continuous"]`, and an `available_now` run is refused when it starts
   * instead of listening for a moment and calling that a drain.
   */
  readonly modes?: readonly RunMode[];
  /** Shorthand for `modes: ["continuous"]` (the Python `continuous_only`). */
  readonly continuousOnly?: boolean;
  receive(max: number, waitMs: number, signal: AbortSignal): Promise<Array<ReceivedRecord<Token>>>;
  ack(tokens: Token[]): Promise<void>;
  nack?(tokens: Token[]): Promise<void>;
  /** Keep leases alive while a batch is in flight. */
  extend?(tokens: Token[]): Promise<void>;
  lag?(): Promise<SourceLag | undefined>;
  close?(): Promise<void>;
}

export type Source = CursorSource | AckSource;

/** Anything with the connectors' iterator API. */
export interface StreamConnector {
  stream(): AsyncIterable<unknown>;
  close?(): Promise<void>;
  /**
   * The connector never reaches an end (a live feed it only follows): an `available_now` run is
   * refused when it starts instead of waiting forever for a drain's end. The Python package's
   * `continuous_only` attribute means the same and is honoured too.
   */
  readonly continuousOnly?: boolean;
  /**
   * Set by the sink before `stream()` is called, when the connector has it: true in an
   * `available_now` run (stop at the end of what is there), false otherwise — as the Python
   * package's sink sets a connector's `drain` attribute.
   */
  drain?: boolean;
}
