/**
 * The walk's keyset backfill without PostgreSQL: `backfill.ts <contract> <lake> <from> <to>` pages an
 * in-memory table of orders through WatermarkChunkSource into the bronze lake, in a process of its
 * own (as a job would run), so the lake's DuckDB file is free again when it ends.
 */
import { StreamSink } from "../../src/sink/index.js";
import { WatermarkChunkSource } from "../../src/sources/index.js";
import { range } from "./feed.js";

const [contract, lake, from, to] = process.argv.slice(2) as [string, string, string, string];
// Sorted by the keyset (created_at, order_id), as an index would give them.
const table = [...range(Number(from), Number(to))];
const source = new WatermarkChunkSource(
  async (after, limit) => {
    const at =
      after === undefined
        ? 0
        : table.findIndex((o) => o.created_at > String(after.watermark) || (o.created_at === after.watermark && o.order_id > String(after.tieBreaker)));
    return at < 0 ? [] : table.slice(at, at + limit).map((o) => ({ ...o }));
  },
  { watermarkField: "created_at", tieBreakerField: "order_id", chunkSize: 1000, description: "order history (in memory)" },
);
const sink = new StreamSink(contract, source, { targetPath: lake, checkpointKey: "backfill::orders", batchSize: 500 });
const summary = await sink.run("available_now");
process.stdout.write(`${summary.batches} batches, good ${summary.goodCount.toLocaleString("en")}, quarantined ${summary.badCount.toLocaleString("en")}\n`);
