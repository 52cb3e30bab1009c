/**
 * Starting a source kind's driver (source-driver.ts): the file and PostgreSQL drivers are here,
 * the network sources' in more-sources.ts. Servers are started through the test/support
 * starters; a driver loads a dataset into a fresh stream and names it in a JSON source config
 * that both `lakelogic run` and a Temporal worker accept.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { startPostgres, type PostgresServer } from "../../test/support/postgres.js";
import { bigIdText, itemText } from "./dataset.js";
import { kafkaDriver, pubsubDriver, sqsDriver, sseDriver } from "./more-sources.js";
import type { SourceDriver, SourceKind } from "./source-driver.js";

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
