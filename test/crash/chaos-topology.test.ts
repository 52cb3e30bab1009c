/**
 * The chaos harness's topology options, checked before any server starts: two machines need a
 * lake on shared storage, and the report names where the lakes live.
 */
import { describe, expect, it } from "vitest";
import { chaosTopology } from "../../scripts/chaos/harness.js";

describe("chaos topology", () => {
  it("one machine by default, lakes on the local disk with SQLite checkpoints", () => {
    expect(chaosTopology({})).toEqual({ machines: 1, lake: "duckdb", lakeAt: expect.stringMatching(/local disk/), checkpointAt: expect.stringMatching(/SQLite/) });
  });

  it("two machines refuse a duckdb lake, naming the shared formats", () => {
    expect(() => chaosTopology({ machines: 2 })).toThrow(/--machines 2 needs --lake delta or --lake ducklake/);
    expect(() => chaosTopology({ machines: 2, lake: "duckdb" })).toThrow(/one machine's disk/);
  });

  it("two machines put delta on S3 and ducklake's catalog in PostgreSQL, checkpoints in the lake", () => {
    const delta = chaosTopology({ machines: 2, lake: "delta" });
    expect(delta.lakeAt).toMatch(/^S3 \(s3:\/\/chaos\//);
    expect(delta.checkpointAt).toMatch(/"target"/);
    const ducklake = chaosTopology({ machines: 2, lake: "ducklake" });
    expect(ducklake.lakeAt).toMatch(/PostgreSQL catalog .* data on S3/);
    expect(ducklake.checkpointAt).toMatch(/"target"/);
  });
});
