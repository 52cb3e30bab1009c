/**
 * One writer of the race in ducklake.test.ts: advances stream "race" (append, 10 rows a batch,
 * ids from the batch id) until it reaches BATCHES, reading the checkpoint before each batch and
 * starting again from it when another writer won. Prints {committed, fenced}.
 */
import { CheckpointConflictError } from "../../src/checkpoint/errors.js";
import { openLake } from "../../src/lake/index.js";
import { makeContract } from "./helpers.js";

const [dataPath, writer, total] = process.argv.slice(2) as [string, string, string];
const batches = Number(total);
const contract = makeContract({ format: "ducklake" });
const lake = await openLake(contract, { targetPath: dataPath });
const store = lake.checkpointStore!();
let committed = 0;
let fenced = 0;
for (;;) {
  const held = await store.load("race");
  const next = (held?.batchId ?? 0) + 1;
  if (next > batches) break;
  const good = Array.from({ length: 10 }, (_, i) => ({ id: next * 10 + i, name: writer }));
  const zero = { sourceCount: 0, goodCount: 0, badCount: 0, supersededCount: 0 };
  try {
    const r = await lake.write({
      batchId: next,
      good,
      bad: [],
      checkpoint: { key: "race", cursor: BigInt(next), batchId: next, committedAt: new Date(), batch: zero, totals: zero, writerId: writer },
    });
    if (r.checkpointOutcome === "committed") committed++;
  } catch (e) {
    if (!(e instanceof CheckpointConflictError)) throw e;
    fenced++;
  }
}
await lake.close();
console.log(JSON.stringify({ committed, fenced }));
process.exit(0);
