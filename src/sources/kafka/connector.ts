import type { Cursor } from "../../checkpoint/types.js";
import { ConfigError } from "../../errors.js";
import { KafkaOffsetSource } from "./source.js";
import { optionsFromJson } from "./options.js";
import { kafkaSpec, type KafkaSourceOptions } from "./spec.js";
import type { SourceRecord, StreamConnector } from "../core/types.js";
import type { SourceFactory } from "../core/registry.js";

export { KafkaOffsetSource, kafkaSpec, type KafkaCursor, type KafkaSourceOptions } from "./source.js";
export type { KafkaPosition, KafkaSasl, KafkaLogLevel } from "./source.js";

export interface KafkaConnectorOptions extends KafkaSourceOptions {
  topic: string;
  /**
   * `stream()` only: commit the group's offsets for the records the caller has finished with
   * (all but the one it holds) at most this often, and on `close()`. Default 5000 ms.
   */
  commitIntervalMs?: number;
  /** `stream()` only: called for each message that is not UTF-8 JSON (or is a tombstone). Default: a warning, then skip. */
  onPoison?: (record: SourceRecord) => void;
}

/**
 * Kafka with the iterator API:
 *
 * ```ts
 * const connector = new KafkaConnector({ brokers: ["localhost:9092"], topic: "orders", consumerGroup: "lakelogic" });
 * for await (const event of connector.stream()) console.log(event); // parsed JSON
 * await connector.close();
 * ```
 *
 * `stream()` starts where the consumer group stands (or per `autoOffsetReset`) and commits the
 * group's offsets as it goes: at-least-once for the caller's loop. The connector is also a
 * cursor source, so `new StreamSink(contract, connector)` uses the native Kafka cursor (a
 * checkpointed, crash-safe resume), not a one-shot iteration.
 */
export class KafkaConnector extends KafkaOffsetSource implements StreamConnector {
  private readonly commitIntervalMs: number;
  private readonly onPoison: ((record: SourceRecord) => void) | undefined;
  private streaming: AbortController | undefined;
  /** Positions of the records the caller is done with (it asked for the next one). */
  private done: Cursor | undefined;

  constructor(options: KafkaConnectorOptions) {
    if (typeof options !== "object" || options === null) {
      throw new ConfigError("KafkaConnector", "expected options { brokers, topic, consumerGroup, ... }");
    }
    const { topic, commitIntervalMs, onPoison, ...rest } = options;
    super(topic, rest);
    if (commitIntervalMs !== undefined && (!Number.isInteger(commitIntervalMs) || commitIntervalMs < 0)) {
      throw new ConfigError("commitIntervalMs", `expected a whole number >= 0; got ${JSON.stringify(commitIntervalMs)}`);
    }
    this.commitIntervalMs = commitIntervalMs ?? 5_000;
    this.onPoison = onPoison;
  }

  /** Parsed JSON values, one per message, until `close()` (or the loop breaks). */
  async *stream(): AsyncGenerator<unknown> {
    if (this.streaming) throw new ConfigError("stream", `${this.description}: stream() is already being iterated`);
    const controller = new AbortController();
    this.streaming = controller;
    this.done = undefined;
    let lastCommit = Date.now();
    try {
      for await (const record of this.read({ mode: "continuous", signal: controller.signal })) {
        if (record.decodeError !== undefined || record.delete !== undefined) {
          // A tombstone under `tombstones: delete` has no value to hand over either.
          const why = record.decodeError ?? "a tombstone (a delete of its key)";
          if (this.onPoison) this.onPoison(record);
          else this.options.onWarning(`${this.description}: skipped a message at ${JSON.stringify(record.position)}: ${why}`);
        } else {
          yield record.value;
        }
        // Reaching here means the caller asked for the next value: it is done with this one.
        this.done = this.currentCursor();
        if (this.commitIntervalMs === 0 || Date.now() - lastCommit >= this.commitIntervalMs) {
          lastCommit = Date.now();
          if (this.done !== undefined) await this.committed(this.done);
        }
      }
    } finally {
      // The value the caller held when it stopped is not known to be processed: not committed.
      if (this.done !== undefined) await this.committed(this.done).catch(() => undefined);
      this.streaming = undefined;
    }
  }

  override async close(): Promise<void> {
    this.streaming?.abort();
    if (this.done !== undefined) await this.committed(this.done).catch(() => undefined);
    await super.close();
  }
}

/** `{ "type": "kafka", "brokers": [...], "topic": "...", "groupId": "...", ... }` → KafkaOffsetSource. */
export const kafkaSourceFactory: SourceFactory = {
  spec: kafkaSpec,
  create: (o) => {
    const { topic, options } = optionsFromJson(o);
    return new KafkaOffsetSource(topic, options);
  },
};

