/**
 * The lean memory profile configures DuckDB's allocator before its native library loads, so
 * that memory a query frees leaves the process at once (docs/lake.md, "Memory"). Each case runs
 * in its own process: jemalloc reads its configuration once per process. Linux only (/proc).
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const child = fileURLToPath(new URL("./fixtures/allocator-child.ts", import.meta.url));

function run(env: Record<string, string>): { retainedMb: number; conf: string | null } {
  const base = { ...process.env };
  delete base["LAKELOGIC_MEMORY_PROFILE"];
  delete base["DUCKDB_JE_MALLOC_CONF"];
  const out = execFileSync(process.execPath, ["--import", "tsx", child], { env: { ...base, ...env }, encoding: "utf8" });
  return JSON.parse(out) as { retainedMb: number; conf: string | null };
}

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
});
