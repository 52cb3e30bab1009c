import { describe, expect, it } from "vitest";
import {
  afterCommit,
  fetchLocally,
  fetchSize,
  initialCarry,
  reachedMaxBatches,
  resultOf,
  resync,
  shouldContinueAsNew,
  stateOf,
  statusOf,
  wantsReadAhead,
  withRules,
} from "../../workflows/state.js";
import { addRules, noRules } from "../../src/pipeline/rule-tally.js";
import { decodeCursorForDisplay } from "../../workflows/display.js";
import { encodeCursor } from "../../src/checkpoint/codec.js";
import type { StreamCarry } from "../../workflows/types.js";

const open = { key: "k", dataset: "orders", cursor: encodeCursor({ offset: 10 }), batchId: 3, totals: { sourceCount: 30, goodCount: 28, badCount: 2, supersededCount: 0 } };

describe("stream workflow state", () => {
  it("starts from the checkpoint store's position", () => {
    const c = initialCarry(open, "2026-01-01T00:00:00.000Z");
    expect(c).toMatchObject({ cursor: open.cursor, batchId: 3, totals: open.totals, resumedFrom: open.cursor, paused: false });
    expect(c.run).toEqual({ batches: 0, sourceCount: 0, goodCount: 0, badCount: 0, supersededCount: 0 });
  });

  it("advances cursor, batch id, totals and run counts only from a write result", () => {
    const c = afterCommit(initialCarry(open, "t"), "next", {
      batchId: 4,
      totals: { sourceCount: 40, goodCount: 37, badCount: 3, supersededCount: 0 },
      batch: { sourceCount: 10, goodCount: 9, badCount: 1, supersededCount: 0 },
      committedAt: "2026-01-01T00:00:01.000Z",
      outcome: "committed",
    });
    expect(c).toMatchObject({ cursor: "next", batchId: 4, lastCommitAt: "2026-01-01T00:00:01.000Z" });
    expect(c.run).toEqual({ batches: 1, sourceCount: 10, goodCount: 9, badCount: 1, supersededCount: 0 });
  });

  it("takes the store's position after a lost worker, counting what that worker committed", () => {
    const c = initialCarry(open, "t");
    expect(resync(c, open)).toBe(c);
    const moved = resync(c, { ...open, cursor: "later", batchId: 5, totals: { sourceCount: 50, goodCount: 46, badCount: 4, supersededCount: 0 } });
    expect(moved).toMatchObject({ cursor: "later", batchId: 5 });
    expect(moved.run).toEqual({ batches: 2, sourceCount: 20, goodCount: 18, badCount: 2, supersededCount: 0 });
  });

  it("sums the rule results of each writeBatches call into its status and result, carried as state", () => {
    const batch = (failed: number, rows: number) => ({
      ruleCounts: [{ ruleId: "range:amount", severity: "error" as const, failed, passed: 10 - failed }],
      datasetRules: [{ ruleId: "row_count_between", kind: "row_count_between", severity: "error" as const, passed: rows <= 8, observed: rows, message: `${rows} rows` }],
    });
    const call1 = addRules(addRules(noRules(), batch(2, 8)), batch(1, 9));
    // A NaN observation (not measured) arrives from JSON as null.
    const call2 = addRules(noRules(), { ...batch(0, 10), datasetRules: [{ ...batch(0, 10).datasetRules[0]!, observed: NaN, passed: false, error: "boom" }] });
    const c = withRules(withRules(initialCarry(open, "t"), call1), call2);
    expect(c.rules!.rows).toEqual([{ ruleId: "range:amount", severity: "error", failed: 3, passed: 27 }]);
    expect(c.rules!.dataset).toEqual([{ ruleId: "row_count_between", kind: "row_count_between", severity: "error", passedBatches: 1, failedBatches: 2, lastObserved: null, lastMessage: "boom" }]);
    expect(statusOf(c, "running", "continuous", null, decodeCursorForDisplay).rules).toEqual(c.rules);
    expect(resultOf(c, "end", "t2", decodeCursorForDisplay).rules).toEqual(c.rules);
    // A carry recorded before rule results existed reports none.
    expect(statusOf(initialCarry(open, "t"), "running", "continuous", null, decodeCursorForDisplay).rules).toEqual(noRules());
    expect(withRules(c, undefined)).toBe(c);
  });

  it("counts superseded records", () => {
    const old: StreamCarry = { ...initialCarry(open, "t"), run: { batches: 1, sourceCount: 5, goodCount: 5, badCount: 0, supersededCount: 0 } };
    const next = afterCommit(old, encodeCursor({ offset: 20 }), {
      batchId: 4,
      totals: { sourceCount: 40, goodCount: 36, badCount: 2, supersededCount: 2 },
      batch: { sourceCount: 10, goodCount: 8, badCount: 0, supersededCount: 2 },
      committedAt: "2026-01-01T00:00:01.000Z",
      outcome: "committed",
    });
    expect(next.run).toEqual({ batches: 2, sourceCount: 15, goodCount: 13, badCount: 0, supersededCount: 2 });
    const status = statusOf(next, "running", "continuous", null, decodeCursorForDisplay);
    expect(status).toMatchObject({ sourceCount: 40, goodCount: 36, badCount: 2, supersededCount: 2 });
    expect(status.sourceCount).toBe(status.goodCount + status.badCount + status.supersededCount);
    const moved = resync(old, { ...open, batchId: 5, totals: { sourceCount: 40, goodCount: 35, badCount: 2, supersededCount: 3 } });
    expect(moved.run).toEqual({ batches: 3, sourceCount: 15, goodCount: 12, badCount: 0, supersededCount: 3 });
  });

  it("continues as new when suggested or every N batches, never before the first batch", () => {
    expect(shouldContinueAsNew({}, 0, true)).toBe(false);
    expect(shouldContinueAsNew({}, 1, true)).toBe(true);
    expect(shouldContinueAsNew({ continueAsNewEvery: 5 }, 4, false)).toBe(false);
    expect(shouldContinueAsNew({ continueAsNewEvery: 5 }, 5, false)).toBe(true);
    expect(shouldContinueAsNew({}, 199, false)).toBe(false);
    expect(shouldContinueAsNew({}, 200, false)).toBe(true);
  });

  it("stops at maxBatches across continue-as-new (run counts are carried)", () => {
    const c = { ...initialCarry(open, "t"), run: { batches: 7, sourceCount: 0, goodCount: 0, badCount: 0, supersededCount: 0 } };
    expect(reachedMaxBatches({ maxBatches: 7 }, c)).toBe(true);
    expect(reachedMaxBatches({ maxBatches: 8 }, c)).toBe(false);
    expect(reachedMaxBatches({}, c)).toBe(false);
  });

  it("lets the worker read the next batch ahead only when the loop will fetch it", () => {
    const c = { ...initialCarry(open, "t"), run: { batches: 3, sourceCount: 0, goodCount: 0, badCount: 0, supersededCount: 0 } };
    const go = { paused: false, stopRequested: false };
    expect(wantsReadAhead({}, c, go, 0, false)).toBe(true);
    // A stop or pause request: the loop ends or parks after this batch.
    expect(wantsReadAhead({}, c, { paused: false, stopRequested: true }, 0, false)).toBe(false);
    expect(wantsReadAhead({}, c, { paused: true, stopRequested: false }, 0, false)).toBe(false);
    // This batch is the last one maxBatches allows (run counts carried across continue-as-new).
    expect(wantsReadAhead({ maxBatches: 4 }, c, go, 0, false)).toBe(false);
    expect(wantsReadAhead({ maxBatches: 5 }, c, go, 0, false)).toBe(true);
    // Continue-as-new is due after this batch: suggested, or the batch count reached.
    expect(wantsReadAhead({}, c, go, 0, true)).toBe(false);
    expect(wantsReadAhead({ continueAsNewEvery: 5 }, c, go, 4, false)).toBe(false);
    expect(wantsReadAhead({ continueAsNewEvery: 5 }, c, go, 3, false)).toBe(true);
  });

  it("tries a fetch locally only after one that left the worker reading ahead, at most localFetchesPerRoundTrip in a row", () => {
    expect(fetchLocally({}, true, 0)).toBe(true);
    expect(fetchLocally({}, true, 2)).toBe(true);
    expect(fetchLocally({}, true, 3)).toBe(false); // default 3: the 4th goes through the server
    expect(fetchLocally({}, false, 0)).toBe(false);
    expect(fetchLocally({ localFetchesPerRoundTrip: 0 }, true, 0)).toBe(false);
    expect(fetchLocally({ localFetchesPerRoundTrip: 1 }, true, 0)).toBe(true);
    expect(fetchLocally({ localFetchesPerRoundTrip: 1 }, true, 1)).toBe(false);
  });

  it("asks a fetch for up to batchesPerFetch batches, never past maxBatches or a due continue-as-new", () => {
    const c = { ...initialCarry(open, "t"), run: { batches: 3, sourceCount: 0, goodCount: 0, badCount: 0, supersededCount: 0 } };
    expect(fetchSize({}, c, 0)).toBe(4);
    expect(fetchSize({ batchesPerFetch: 1 }, c, 0)).toBe(1);
    expect(fetchSize({ batchesPerFetch: 0 }, c, 0)).toBe(1);
    expect(fetchSize({ batchesPerFetch: 8 }, c, 0)).toBe(8);
    expect(fetchSize({ maxBatches: 5 }, c, 0)).toBe(2);
    expect(fetchSize({ maxBatches: 4 }, c, 0)).toBe(1);
    expect(fetchSize({ continueAsNewEvery: 10 }, c, 8)).toBe(2);
    expect(fetchSize({}, c, 198)).toBe(2);
    // A read-ahead is wanted only if the loop fetches again after all of them.
    const go = { paused: false, stopRequested: false };
    expect(wantsReadAhead({ maxBatches: 7 }, c, go, 0, false, 4)).toBe(false);
    expect(wantsReadAhead({ maxBatches: 8 }, c, go, 0, false, 4)).toBe(true);
    expect(wantsReadAhead({ continueAsNewEvery: 10 }, c, go, 6, false, 4)).toBe(false);
    expect(wantsReadAhead({ continueAsNewEvery: 10 }, c, go, 5, false, 4)).toBe(true);
  });

  it("says paused only once parked, and stop wins over pause", () => {
    expect(stateOf({ paused: false, stopRequested: false }, "working")).toBe("running");
    expect(stateOf({ paused: true, stopRequested: false }, "working")).toBe("pausing");
    expect(stateOf({ paused: true, stopRequested: false }, "parked")).toBe("paused");
    expect(stateOf({ paused: true, stopRequested: true }, "parked")).toBe("stopping");
    expect(stateOf({ paused: false, stopRequested: true }, "finished")).toBe("completed");
  });

  it("shows cursors in plain JSON (bigint and Date as strings) in status and result", () => {
    const c = { ...initialCarry(open, "t"), cursor: encodeCursor({ wm: new Date("2024-01-01T00:00:00Z"), id: 12n }) };
    const s = statusOf(c, "running", "continuous", { records: 5 }, decodeCursorForDisplay);
    expect(s.cursor).toEqual({ wm: "2024-01-01T00:00:00.000Z", id: "12" });
    expect(JSON.parse(JSON.stringify(s))).toEqual(s);
    const r = resultOf(c, "stop", "t2", decodeCursorForDisplay);
    expect(r).toMatchObject({ stoppedBy: "stop", resumedFrom: { offset: 10 }, finishedAt: "t2" });
  });
});
