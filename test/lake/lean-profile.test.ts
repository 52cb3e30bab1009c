/**
 * The process-wide part of the lean memory profile (docs/lake.md, "The lean memory profile"):
 * DuckDB's allocator, configured before its native library loads, so that memory a query frees
 * leaves the process at once; and V8's old generation, kept from growing far past what is live.
 * Each case runs in its own process: both are read once per process. Linux only (/proc).
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const allocatorChild = fileURLToPath(new URL("./fixtures/allocator-child.ts", import.meta.url));
const heapChild = fileURLToPath(new URL("./fixtures/heap-growth-child.ts", import.meta.url));

function runChild<T>(script: string, env: Record<string, string>): T {
  const base = { ...process.env };
  delete base["LAKELOGIC_MEMORY_PROFILE"];
  delete base["DUCKDB_JE_MALLOC_CONF"];
  const out = execFileSync(process.execPath, ["--import", "tsx", script], { env: { ...base, ...env }, encoding: "utf8" });
  return JSON.parse(out) as T;
}
const run = (env: Record<string, string>) => runChild<{ retainedMb: number; conf: string | null }>(allocatorChild, env);

describe.runIf(process.platform === "linux")("DuckDB's allocator and the memory profile", () => {
  it("keeps DuckDB's own allocator setting by default: freed memory stays resident for a while", () => {
    const r = run({});
    expect(r.conf).toBeNull();
    expect(r.retainedMb).toBeGreaterThan(60);
  });

  it("under the lean profile, returns freed memory at once", () => {
    const r = run({ LAKELOGIC_MEMORY_PROFILE: "lean" });
    expect(r.conf).toBe("dirty_decay_ms:0,muzzy_decay_ms:0");
    expect(r.retainedMb).toBeLessThan(30);
  });

  it("leaves a setting the user made alone, even an empty one", () => {
    const r = run({ LAKELOGIC_MEMORY_PROFILE: "lean", DUCKDB_JE_MALLOC_CONF: "" });
    expect(r.conf).toBe("");
    expect(r.retainedMb).toBeGreaterThan(60);
  });

  it("under the lean profile, keeps V8's heap near what is live", () => {
    const heap = (env: Record<string, string>) => runChild<{ maxHeapMb: number }>(heapChild, env).maxHeapMb;
    const plain = heap({});
    const lean = heap({ LAKELOGIC_MEMORY_PROFILE: "lean" });
    // Measured: ~150 MB against ~88 MB; the pattern keeps ~30 MB alive.
    expect(lean).toBeLessThan(plain * 0.8);
  });
});
