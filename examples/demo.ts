/**
 * `npm run demo` — the embedded default, end to end, with nothing to install or start:
 *
 *  1. a child process streams generated order events into ./lake (DuckDB, merge on order_id,
 *     SQLite checkpoint) and is killed with SIGKILL part-way through;
 *  2. a new StreamSink resumes from the committed cursor and drains the rest;
 *  3. the checkpoint is rewound by one batch (a crash between write and commit) and the run is
 *     repeated: the replayed batch adds nothing;
 *  4. the rows are counted: every good order once, every bad one in quarantine once.
 */
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { isBadOrder, orderEvents } from "./orders.js";
import { loadContract } from "../src/contract/index.js";
import { readQuarantine, readTable } from "../src/lake/index.js";
import { SQLiteCheckpointStore } from "../src/checkpoint/sqlite.js";
import { StreamSink } from "../src/sink/index.js";
import { createLogger } from "../src/observe/index.js";
import { IterableSource } from "../src/sources/index.js";

const RECORDS = 200_000;
const BATCH = 5_000;
const LAKE = "./lake";
const CHECKPOINT = "./lake/_lakelogic/checkpoints.sqlite";
const KEY = "stream::orders";
const contractPath = fileURLToPath(new URL("./orders.yaml", import.meta.url));

/** The same replayable stream in every process: the generator yields identical events each time. */
const source = () => new IterableSource(() => orderEvents(RECORDS), { replayable: true, description: "order events" });

function sink(onBatch?: (batchId: number) => void, resetCheckpoint = false) {
  return new StreamSink(contractPath, source(), {
    targetPath: LAKE,
    checkpoint: CHECKPOINT,
    checkpointKey: KEY,
    batchSize: BATCH,
    onBatch: (b) => onBatch?.(b.batchId),
    resetCheckpoint,
    // The rewind's notice (step 3) as a log line on stderr, not a Node.js process warning.
    logger: createLogger(),
  });
}

if (process.argv[2] === "--child") {
  await sink((id) => process.stdout.write(`committed ${id}\n`)).run("available_now");
  process.exit(0);
}

const say = (s: string) => console.log(s);
rmSync(LAKE, { recursive: true, force: true });
say(`LakeLogic demo: ${RECORDS.toLocaleString("en")} order events (~5 % bad) → ${LAKE} (DuckDB, merge on order_id)\n`);

// 1. Interrupted: kill a real process after a third of the batches committed.
const killAt = Math.floor(RECORDS / BATCH / 3);
const killedAt = await new Promise<number>((resolve, reject) => {
  const child = spawn(process.execPath, ["--import", import.meta.resolve("tsx"), fileURLToPath(import.meta.url), "--child"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let last = 0;
  child.stdout.on("data", (chunk: Buffer) => {
    for (const m of chunk.toString().matchAll(/committed (\d+)/g)) last = Number(m[1]);
    if (last >= killAt) child.kill("SIGKILL");
  });
  child.on("error", reject);
  child.on("exit", (_code, signal) => (signal === "SIGKILL" ? resolve(last) : reject(new Error("child was not killed"))));
});
const store = new SQLiteCheckpointStore(CHECKPOINT);
const afterKill = await store.load(KEY);
say(`1. Interrupted: SIGKILL after batch ${killedAt}; committed cursor ${JSON.stringify(afterKill?.cursor)}`);

// 2. Resumed: a fresh sink picks up at the committed cursor.
const resumed = await sink().run("available_now");
say(
  `2. Resumed from ${JSON.stringify(resumed.resumedFrom)}: ${resumed.sourceCount.toLocaleString("en")} more records ` +
    `in ${resumed.batches} batches → cursor ${JSON.stringify(resumed.cursor)}`,
);

// 3. Replayed: pretend the last commit never happened (a crash between write and commit).
await store.close();
const before = await counts();
const replay = await rewindOneBatchAndRun();
const after = await counts();
say(
  `3. Replayed the last batch (${replay.sourceCount.toLocaleString("en")} records) as after a crash before its commit: ` +
    `good rows ${before.good} → ${after.good}, quarantine ${before.bad} → ${after.bad}`,
);

// 4. Counted.
let expectedBad = 0;
for (let i = 0; i < RECORDS; i++) if (isBadOrder(i)) expectedBad++;
const ok =
  after.good === RECORDS - expectedBad &&
  after.distinctGood === after.good &&
  after.bad === expectedBad &&
  after.good + after.bad === RECORDS &&
  before.good === after.good &&
  before.bad === after.bad;
say(
  `4. Counted: ${after.good.toLocaleString("en")} good (distinct order_id: ${after.distinctGood.toLocaleString("en")}), ` +
    `${after.bad.toLocaleString("en")} quarantined; in = good + quarantined = ${(after.good + after.bad).toLocaleString("en")}`,
);
say(
  ok
    ? `\nProved: a SIGKILL lost nothing, the resume duplicated nothing, and a replayed batch was harmless (the last ${BATCH.toLocaleString("en")} records replayed).`
    : `\nNOT PROVED: the counts above do not add up.`,
);
process.exit(ok ? 0 : 1);

async function counts() {
  const contract = await loadContract(contractPath);
  const good = await readTable(contract, { targetPath: LAKE });
  const bad = await readQuarantine(contract, { targetPath: LAKE });
  return { good: good.length, distinctGood: new Set(good.map((r) => String(r.order_id))).size, bad: bad.length };
}

async function rewindOneBatchAndRun() {
  // What a crash between write and commit leaves behind: the rows of the last batch are in the
  // lake, but the checkpoint still points before them. Rewind it by hand with the operator's
  // escape hatch, then run again.
  const s = new SQLiteCheckpointStore(CHECKPOINT);
  const last = (await s.load(KEY))!;
  let bad = 0;
  for (let i = RECORDS - BATCH; i < RECORDS; i++) if (isBadOrder(i)) bad++;
  // The run ended with an empty batch that only marked the iterable as read to the end; the
  // records' batch is the one before it, and the checkpoint goes back to the batch before that
  // (batch ids stay in step with the rows, as after a real crash).
  const recordsBatch = last.batch.sourceCount === 0 ? last.batchId - 1 : last.batchId;
  await s.overwrite({
    ...last,
    batchId: recordsBatch - 1,
    cursor: { offset: RECORDS - BATCH, exhausted: false },
    totals: {
      sourceCount: last.totals.sourceCount - BATCH,
      goodCount: last.totals.goodCount - (BATCH - bad),
      badCount: last.totals.badCount - bad,
      supersededCount: last.totals.supersededCount,
    },
  });
  await s.close();
  // The lake logged the run's last batch with its rows, so it sees the checkpoint behind it; a
  // rewind on purpose says so (otherwise the stream refuses to start: a lost checkpoint).
  return sink(undefined, true).run("available_now");
}
