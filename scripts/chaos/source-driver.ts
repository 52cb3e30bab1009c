/**
 * What the chaos harness knows of a source kind: the kinds, and the driver each one has (the
 * servers it needs, how to load a dataset into a fresh stream). sources.ts starts a driver;
 * the network sources' drivers are in more-sources.ts.
 */
import type { Dataset } from "./dataset.js";

export const SOURCE_KINDS = ["file", "postgres", "sse", "kafka", "sqs", "pubsub"] as const;
export type SourceKind = (typeof SOURCE_KINDS)[number];

/** A loaded stream: the `--source` config and the environment its consumer needs. */
export interface LoadedStream {
  source: Record<string, unknown>;
  env: Record<string, string>;
  /** Cursor sources replay exactly from the checkpoint: totals must equal what was produced. */
  exactTotals: boolean;
  /** The source delivers in production order, so each key must end on its last event. */
  ordered: boolean;
  /** Queues: messages not yet acknowledged. A run ends on an empty receive while a dead consumer's lease still hides some. */
  remaining?: () => Promise<number>;
}

export interface SourceDriver {
  kind: SourceKind;
  /** Whether payloads are text (so decode and type poison can be produced). */
  text: boolean;
  /**
   * Records a stream of this source gets through per kill, at most, when its delivery is paced
   * (Pub/Sub); the stream's dataset is sized by it so that its drain stays short.
   */
  pacedRecordsPerKill?: number;
  load(name: string, dir: string, data: Dataset): Promise<LoadedStream>;
  stop(): Promise<void>;
}
