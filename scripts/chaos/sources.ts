/**
 * The source kinds the chaos harness drives: for each, the servers it needs (started through the
 * test/support starters) and how to load a dataset into a fresh stream and name it in a JSON
 * source config that both `lakelogic run` and a Temporal worker accept.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { startPostgres, type PostgresServer } from "../../test/support/postgres.js";
import { bigIdText, itemText, type Dataset } from "./dataset.js";
import { kafkaDriver, pubsubDriver, sqsDriver, sseDriver } from "./more-sources.js";

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

const fileDriver: SourceDriver = {
  kind: "file",
  text: true,
  load: async (_name, dir, data) => {
    const path = join(dir, "events.ndjson");
    writeFileSync(path, data.items.map((i) => itemText(i) + "\n").join(""));
    return { source: { type: "file", path }, env: {}, exactTotals: true, ordered: true };
  },
  stop: async () => undefined,
};

async function postgresDriver(): Promise<SourceDriver> {
  const server: PostgresServer = await startPostgres();
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  return {
    kind: "postgres",
    text: false,
    load: async (name, _dir, data) => {
      const table = `chaos_${name.replace(/[^a-z0-9_]/gi, "_")}`;
      await client.query(
        `CREATE TABLE ${table} (seq integer PRIMARY KEY, id bigint, version integer, status text, amount double precision, email text, tag text)`,
      );
      const rows = data.items.flatMap((i) => (i.kind === "event" ? [i.event] : []));
      for (let at = 0; at < rows.length; at += 500) {
        const chunk = rows.slice(at, at + 500);
        const values: unknown[] = [];
        const tuples = chunk.map((e, j) => {
          values.push(e.seq, e.id === null ? null : bigIdText(e.id), e.version, e.status, e.amount, e.email, e.tag);
          return `(${Array.from({ length: 7 }, (_, c) => `$${j * 7 + c + 1}`).join(",")})`;
        });
        await client.query(`INSERT INTO ${table} VALUES ${tuples.join(",")}`, values);
      }
      return {
        // The URL reaches the consumer as a secret reference, as a deployment would pass it.
        source: { type: "postgres", url: "env:PG_URL", table, watermarkField: "seq", tieBreakerField: "tag", chunkSize: 100 },
        env: { PG_URL: server.url },
        exactTotals: true,
        ordered: true,
      };
    },
    stop: async () => {
      await client.end();
      await server.stop();
    },
  };
}

/** Start what a source kind needs; the caller stops it. */
export async function startDriver(kind: SourceKind): Promise<SourceDriver> {
  switch (kind) {
    case "file":
      return fileDriver;
    case "postgres":
      return postgresDriver();
    case "sse":
      return sseDriver();
    case "kafka":
      return kafkaDriver();
    case "sqs":
      return sqsDriver();
    case "pubsub":
      return pubsubDriver();
  }
}
