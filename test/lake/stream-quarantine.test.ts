/**
 * How a stream's quarantine rows stay unique in a duckdb lake (WriteRequest.stream): a replaying
 * cursor source's uncommitted attempts are replaced, everything else is looked up.
 */
import { describe, expect, it } from "vitest";
import { openLake, readQuarantine, type LakeWriter, type QuarantineRow, type WriteStream } from "../../src/lake/index.js";
import { makeContract, tempDirs } from "./helpers.js";

const lakeDir = tempDirs();

const bad = (i: number): QuarantineRow => ({
  record: { id: `x${i}` },
  errors: [{ ruleId: "type:id", message: `id x${i} is not an integer` }],
  position: { offset: i },
});
const bads = (from: number, to: number): QuarantineRow[] => Array.from({ length: to - from }, (_, k) => bad(from + k));

const contract = () => makeContract({ format: "duckdb", strategy: "merge", primaryKey: ["id"] });
const cursor = (key: string, previousCommittedAt: Date | null): WriteStream => ({ key, replay: "cursor", previousCommittedAt });
const tick = () => new Promise((r) => setTimeout(r, 5));

/** Offsets of the stored rows of one stream, sorted, with their batch ids. */
async function stored(targetPath: string, key = "s") {
  const rows = (await readQuarantine(contract(), { targetPath })).filter((r) => r.streamKey === key);
  return rows.map((r) => [(r.position as { offset: number }).offset, r.batchId]).sort((a, b) => a[0]! - b[0]!);
}

describe("duckdb quarantine of a stream", () => {
  it("replaces an uncommitted attempt that a resumed run cuts into smaller batches", async () => {
    const targetPath = lakeDir("sq-spill");
    let w: LakeWriter = await openLake(contract(), { targetPath });
    await w.write({ batchId: 1, good: [], bad: bads(0, 3), stream: cursor("s", null) });
    const committed1 = new Date();
    await tick();
    // Batch 2 is written (offsets 3..9) and the process dies before its checkpoint commits.
    await w.write({ batchId: 2, good: [], bad: bads(3, 10), stream: cursor("s", committed1) });
    await w.close();

    // The resumed run reads from batch 1's cursor again, in batches of three records.
    w = await openLake(contract(), { targetPath });
    const a = await w.write({ batchId: 2, good: [], bad: bads(3, 6), stream: cursor("s", committed1) });
    const committed2 = new Date();
    await tick();
    const b = await w.write({ batchId: 3, good: [], bad: bads(6, 9), stream: cursor("s", committed2) });
    const committed3 = new Date();
    await tick();
    const c = await w.write({ batchId: 4, good: [], bad: bads(9, 12), stream: cursor("s", committed3) });
    await w.close();

    expect(a).toMatchObject({ badWritten: 3, badAlreadyPresent: 3 });
    expect(b).toMatchObject({ badWritten: 3, badAlreadyPresent: 0 });
    expect(c).toMatchObject({ badWritten: 3, badAlreadyPresent: 0 });
    const rows = await stored(targetPath);
    expect(rows.map((r) => r[0])).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(rows.map((r) => r[1])).toEqual([1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4]);
  });

  it("does not look up batches the stream committed (a replaying source never sends them again)", async () => {
    const targetPath = lakeDir("sq-nolookup");
    const w = await openLake(contract(), { targetPath });
    await w.write({ batchId: 1, good: [], bad: [bad(1)], stream: cursor("s", null) });
    const committed1 = new Date();
    await tick();
    // The same row in a later batch is taken as new: this is what keeps the write from reading
    // the whole quarantine table.
    const r = await w.write({ batchId: 2, good: [], bad: [bad(1)], stream: cursor("s", committed1) });
    await w.close();
    expect(r).toMatchObject({ badWritten: 1, badAlreadyPresent: 0 });
    expect(await stored(targetPath)).toEqual([
      [1, 1],
      [1, 2],
    ]);
  });

  it("looks up every row when the source may deliver a record again", async () => {
    const targetPath = lakeDir("sq-redeliver");
    const w = await openLake(contract(), { targetPath });
    const stream = (at: Date | null): WriteStream => ({ key: "q", replay: "redeliver", previousCommittedAt: at });
    await w.write({ batchId: 1, good: [], bad: bads(0, 3), stream: stream(null) });
    const committed1 = new Date();
    const r = await w.write({ batchId: 2, good: [], bad: bads(2, 5), stream: stream(committed1) });
    await w.close();
    expect(r).toMatchObject({ badWritten: 2, badAlreadyPresent: 1 });
    expect((await stored(targetPath, "q")).map((x) => x[0])).toEqual([0, 1, 2, 3, 4]);
  });

  it("hands rows of an earlier life (a deleted checkpoint) to the table, and keeps looking them up", async () => {
    const targetPath = lakeDir("sq-reset");
    let w = await openLake(contract(), { targetPath });
    await w.write({ batchId: 1, good: [], bad: bads(0, 2), stream: cursor("s", null) });
    await tick();
    await w.write({ batchId: 2, good: [], bad: bads(2, 4), stream: cursor("s", new Date()) });
    await w.close();

    // The checkpoint was deleted: the stream starts again at batch 1 over the same records.
    w = await openLake(contract(), { targetPath });
    const a = await w.write({ batchId: 1, good: [], bad: bads(0, 3), stream: cursor("s", null) });
    await w.close();
    await tick();
    // Restarted after that batch committed: the old rows are still looked up.
    w = await openLake(contract(), { targetPath });
    const b = await w.write({ batchId: 2, good: [], bad: bads(3, 5), stream: cursor("s", new Date()) });
    await w.close();
    expect(a).toMatchObject({ badWritten: 0, badAlreadyPresent: 3 });
    expect(b).toMatchObject({ badWritten: 1, badAlreadyPresent: 1 });
    const rows = await readQuarantine(contract(), { targetPath });
    expect(rows.map((r) => (r.position as { offset: number }).offset).sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4]);
    expect(rows.filter((r) => r.streamKey === null)).toHaveLength(4);
  });

  it("looks up a first batch that died uncommitted in every later life, however far it reached", async () => {
    // As a source that hands a resumed run its partitions one at a time does: the dead first
    // batch held records 0..9, the second life reads only 0..2 before it dies too, the third
    // reads the rest.
    const targetPath = lakeDir("sq-first");
    let w = await openLake(contract(), { targetPath });
    await w.write({ batchId: 1, good: [], bad: bads(0, 10), stream: cursor("s", null) });
    await w.close();
    w = await openLake(contract(), { targetPath });
    await w.write({ batchId: 1, good: [], bad: bads(0, 3), stream: cursor("s", null) });
    const committed1 = new Date();
    await tick();
    await w.write({ batchId: 2, good: [], bad: bads(3, 4), stream: cursor("s", committed1) }); // dies uncommitted
    await w.close();
    w = await openLake(contract(), { targetPath });
    const c = await w.write({ batchId: 2, good: [], bad: bads(3, 12), stream: cursor("s", committed1) });
    await w.close();
    expect(c).toMatchObject({ badWritten: 2, badAlreadyPresent: 7 });
    const rows = await readQuarantine(contract(), { targetPath });
    expect(rows.map((r) => (r.position as { offset: number }).offset).sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  });

  it("leaves other streams' rows alone", async () => {
    const targetPath = lakeDir("sq-streams");
    const w = await openLake(contract(), { targetPath });
    await w.write({ batchId: 5, good: [], bad: bads(100, 103), stream: cursor("other", null) });
    await w.write({ batchId: 6, good: [], bad: bads(200, 201) });
    // Stream "s" starts at batch 1: rows of batch ids ≥ 1 of other streams and of direct writes stay.
    await w.write({ batchId: 1, good: [], bad: bads(0, 2), stream: cursor("s", null) });
    await w.close();
    expect((await stored(targetPath, "other")).map((x) => x[0])).toEqual([100, 101, 102]);
    expect((await stored(targetPath)).map((x) => x[0])).toEqual([0, 1]);
    const direct = (await readQuarantine(contract(), { targetPath })).filter((r) => r.streamKey === null);
    expect(direct).toHaveLength(1);
  });
});
