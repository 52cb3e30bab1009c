/**
 * The process-wide part of the lean memory profile (docs/lake.md, "The lean memory profile"):
 * DuckDB's allocator, configured before its native library loads, so that memory a query frees
 * leaves the process at once; and V8's old generation, kept from growing far past what is live
 * (capped under the default profile too, less tightly).
 * Each case runs in its own process: both are read once per process. Linux only (/proc).
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const allocatorChild = fileURLToPath(new URL("./fixtures/allocator-child.ts", import.meta.url));
const heapChild = fileURLToPath(new URL("./fixtures/heap-growth-child.ts", import.meta.url));

function runChild<T>(script: string, env: Record<string, string>, nodeFlags: string[] = []): T {
  const base = { ...process.env };
  delete base["LAKELOGIC_MEMORY_PROFILE"];
  delete base["DUCKDB_JE_MALLOC_CONF"];
  const out = execFileSync(process.execPath, [...nodeFlags, "--import", "tsx", script], { env: { ...base, ...env }, encoding: "utf8" });
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

  const heap = (env: Record<string, string>, nodeFlags: string[] = []) => runChild<{ maxHeapMb: number }>(heapChild, env, nodeFlags).maxHeapMb;

  it("caps V8's old-generation growth by default, unless the process sets its own", () => {
    // --heap-growing-percent=0 is V8's own default (growth picked by V8, up to ~4x); being the
    // user's setting, it is left alone.
    const uncapped = heap({}, ["--heap-growing-percent=0"]);
    const capped = heap({});
    expect(capped).toBeLessThan(uncapped * 0.9);
  });

  it("under the lean profile, keeps V8's heap nearer what is live than by default", () => {
    const plain = heap({});
    const lean = heap({ LAKELOGIC_MEMORY_PROFILE: "lean" });
    expect(lean).toBeLessThan(plain);
  });
});
