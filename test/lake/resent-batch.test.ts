/**
 * A batch sent again after a crash between the lake's commit and the stream's checkpoint (kept
 * outside the lake) — for every format. The resumed run may cut that batch elsewhere (a timer cut
 * the first attempt short; batches that grow start small again): a batch that ends at another
 * cursor holds other records and must be written, or the records past the first attempt's end
 * would be committed unwritten. One that ends at the same cursor holds the same records.
 */
import { describe, expect, it } from "vitest";
import { LAKE_FORMATS, openLake, readTable, type WriteStream } from "../../src/lake/index.js";
import type { LakeFormat } from "../../src/contract/types.js";
import { makeContract, tempDirs } from "./helpers.js";

const lakeDir = tempDirs();
const rows = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, k) => ({ id: from + k, name: `n${from + k}` }));
const stream = (previousCommittedAt: Date | null, line: number): WriteStream => ({ key: "s", replay: "cursor", previousCommittedAt, cursor: { line } });

describe.each([...LAKE_FORMATS] as LakeFormat[])("%s: a batch sent again", (format) => {
  const contract = makeContract({ format, strategy: "merge", primaryKey: ["id"] });

  it("is written when the resumed run cut it elsewhere, and left out when it ends at the same cursor", async () => {
    const targetPath = lakeDir(`resent-${format}`);
    let lake = await openLake(contract, { targetPath });
    await lake.write({ batchId: 1, good: rows(1, 3), bad: [], stream: stream(null, 3) });
    const committed = new Date();
    // Batch 2's first attempt, cut short by its timer after two records, is written; its checkpoint is not.
    await lake.write({ batchId: 2, good: rows(4, 5), bad: [], stream: stream(committed, 5) });
    await lake.close();

    // The resumed run reads on from batch 1's cursor and cuts batch 2 after six records.
    lake = await openLake(contract, { targetPath });
    await lake.write({ batchId: 2, good: rows(4, 9), bad: [], stream: stream(committed, 9) });
    expect((await readTable(contract, { targetPath })).map((r) => r["id"]).sort((a, b) => Number(a) - Number(b))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);

    // The same batch again, ending at the same cursor: nothing changes.
    const again = await lake.write({ batchId: 2, good: rows(4, 9), bad: [], stream: stream(committed, 9) });
    await lake.close();
    if (format === "delta" || format === "ducklake") expect(again.goodWritten).toBe(0);
    const ids = (await readTable(contract, { targetPath })).map((r) => r["id"]);
    expect(ids.sort((a, b) => Number(a) - Number(b))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});
