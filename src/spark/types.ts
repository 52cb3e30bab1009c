/** SparkStreamSink's options and reports (src/spark/stream-sink.ts; checked in ./options.ts). */
import type { RuleCount } from "../engine/types.js";

export type SparkSource =
  | { type: "kafka"; bootstrapServers: string | string[]; topic: string; startingOffsets?: "earliest" | "latest"; maxOffsetsPerTrigger?: number }
  | { type: "json"; path: string; maxFilesPerTrigger?: number }
  | {
      type: "delta";
      path: string;
      /**
       * Read the table's Change Data Feed (the rows each commit inserted or changed) instead of
       * its files. Default: when the table records one (`delta.enableChangeDataFeed`, as
       * LakeLogic's merge tables do), so a bronze that merges can be streamed.
       */
      readChangeFeed?: boolean;
      /** The first table version to read; default the table's snapshot at the stream's start, then its new versions. */
      startingVersion?: number;
      /** At most this many of the table's data files per micro-batch (Delta's default: 1,000), so a large backlog is read in several. */
      maxFilesPerTrigger?: number;
    };

export type SparkTrigger = "available_now" | { processingTime: string };

export interface SparkStreamSinkOptions {
  source: SparkSource;
  /** Spark's checkpoint directory: the source offsets and the batch ids live there. */
  checkpointLocation: string;
  trigger?: SparkTrigger;
  /** The Delta table of good rows; default `<materialization.target_path>/<table>`. */
  targetPath?: string;
  /**
   * The Delta quarantine table; default the contract's `quarantine.target` placed as the lake
   * places it (a name: a table beside the Delta table; a path: a directory holding `<table>`),
   * else `<targetPath>_quarantine`.
   */
  quarantinePath?: string;
  /** Spark master; default `local[2]`. */
  master?: string;
  conf?: Record<string, string>;
  /** Extra Maven coordinates for Spark to resolve (`spark.jars.packages`). */
  packages?: string[];
  onBatch?: (report: SparkBatchReport) => void;
}

export interface SparkBatchReport {
  batchId: number;
  sourceCount: number;
  goodCount: number;
  badCount: number;
  supersededCount: number;
  /** Quarantine rows of a replayed batch that Delta had already committed. */
  badAlreadyPresent: number;
  ruleCounts: RuleCount[];
  durationMs: number;
  /**
   * Where the batch's time went, in ms, all of it on the executors: `validate` encoding the
   * records and running the contract's statement (with the batch's counts, the one result the
   * driver collects); `merge` the good rows' Delta MERGE (or append); `quarantine` the bad rows'
   * reasons and the quarantine table's append.
   */
  phasesMs: { validate: number; merge: number; quarantine: number };
}
