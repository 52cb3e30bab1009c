/**
 * The lake source (bronze → silver) on real DuckDB and Parquet lakes: silver reads exactly what
 * bronze committed, incrementally, sees bronze's merge updates, stops at the available_now
 * snapshot, and survives a SIGKILL without losing or repeating a row.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { loadContract } from "../../src/contract/index.js";
import type { Row } from "../../src/engine/types.js";
import { openLake, readQuarantine, readTable } from "../../src/lake/index.js";
import { StreamSink } from "../../src/sink/index.js";
import { createSource } from "../../src/sources/registry.js";
import { LakeTableSource } from "../../src/sources/lake/source.js";
import type { CursorSource, SourceRecord } from "../../src/sources/core/types.js";
import { bronzeContract, orders, silverContract, writeBronze, type LakeFormat } from "./lake-source-support.js";

const root = mkdtempSync(join(tmpdir(), "lakelogic-lake-source-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = (): string => mkdtempSync(join(root, `t${n++}-`));

async function runSilver(dir: string, format: LakeFormat) {
  const source = await createSource({ type: "lake", path: join(dir, "bronze"), table: "bronze_orders", chunkSize: 16 });
  const sink = new StreamSink(silverContract(dir, format), source, {
    checkpoint: join(dir, "silver-checkpoints.sqlite"),
    batchSize: 40,
    maxWaitMs: 60_000,
  });
  return sink.run("available_now");
}

async function drain(source: CursorSource, mode: "available_now" | "continuous" = "available_now", signal = new AbortController().signal): Promise<SourceRecord[]> {
  const out: SourceRecord[] = [];
  for await (const r of source.read({ mode, signal })) out.push(r);
  return out;
}

async function tables(dir: string, format: LakeFormat) {
  const bronze = await loadContract(bronzeContract(dir, format));
  const silver = await loadContract(silverContract(dir, format));
  return {
    bronze: await readTable(bronze),
    silver: await readTable(silver),
    silverBad: await readQuarantine(silver),
  };
}

const byId = (rows: ReadonlyArray<Record<string, unknown>>) => new Map(rows.map((r) => [String(r["order_id"]), r]));

describe.each(["duckdb", "parquet"] as const)("lake source on a %s bronze", (format) => {
  it("reads what bronze committed, then only what is new, including rows bronze's merge updated", async () => {
    const dir = fresh();
    const b1 = await writeBronze(dir, format, "bronze-1", orders(0, 100));
    expect(b1.badCount).toBe(10);
    const s1 = await runSilver(dir, format);
    // Silver in = bronze good, and in = good + quarantined.
    expect(s1.sourceCount).toBe(b1.goodCount);
    expect(s1.goodCount + s1.badCount).toBe(s1.sourceCount);
    let t = await tables(dir, format);
    expect(t.silver.length).toBe(s1.goodCount);
    expect(t.silverBad.length).toBe(s1.badCount);
    expect(new Set([...t.silver.map((r) => r["order_id"]), ...t.silverBad.map((q) => (q.record as { order_id: string }).order_id)])).toEqual(
      new Set(t.bronze.map((r) => r["order_id"])),
    );

    // More bronze: 40 new orders, and new versions of orders 0..19 (merge updates them in place).
    const b2 = await writeBronze(dir, format, "bronze-2", [...orders(100, 140), ...orders(0, 20, 2)]);
    const s2 = await runSilver(dir, format);
    expect(s2.sourceCount).toBe(b2.goodCount);
    expect(s2.totals.sourceCount).toBe(b1.goodCount + b2.goodCount);
    t = await tables(dir, format);
    const silver = byId(t.silver);
    for (const o of orders(0, 20, 2).filter((o) => o.amount >= 0 && o.status !== "lost")) {
      expect(silver.get(o.order_id)?.["amount"]).toBe(o.amount);
    }
    expect(t.silver.length).toBe(new Set(t.bronze.filter((r) => r["status"] !== "lost").map((r) => r["order_id"])).size);

    // Nothing new: a third run reads nothing.
    expect((await runSilver(dir, format)).sourceCount).toBe(0);
  });

  it("available_now stops at what was committed when the run started", async () => {
    const dir = fresh();
    const b1 = await writeBronze(dir, format, "bronze-1", orders(0, 60));
    const source = (await createSource({ type: "lake", path: join(dir, "bronze"), table: "bronze_orders", chunkSize: 7 })) as CursorSource;
    await source.seek(undefined);
    const end = await source.endCursor!();
    // Bronze commits more (and updates some rows) after the snapshot.
    await writeBronze(dir, format, "bronze-2", [...orders(60, 90), ...orders(0, 10, 3)]);
    const first = await drain(source);
    // Every row of the snapshot but those bronze updated since: they come, changed, in the next drain.
    expect(first.length).toBe(b1.goodCount - orders(0, 10).filter((o) => o.amount >= 0).length);
    expect(first.every((r) => (r.position as { seq: number }).seq <= (end as { seq: number }).seq)).toBe(true);
    expect(source.currentCursor()).toEqual({ seq: Math.max(...first.map((r) => (r.position as { seq: number }).seq)) });
    // The next drain takes the rest from the cursor, in one ordered pass.
    const next = (await createSource({ type: "lake", path: join(dir, "bronze"), table: "bronze_orders" })) as CursorSource;
    await next.seek(source.currentCursor());
    const rest = await drain(next);
    const seqs = rest.map((r) => (r.position as { seq: number }).seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(Math.min(...seqs)).toBeGreaterThan((end as { seq: number }).seq);
    expect(new Set(rest.map((r) => (r.value as { order_id: string }).order_id)).size).toBe(rest.length);
    const ids = (rs: SourceRecord[]) => rs.map((r) => (r.value as { order_id: string }).order_id);
    expect(new Set([...ids(first), ...ids(rest)])).toEqual(new Set(orders(0, 90).filter((o) => o.amount >= 0).map((o) => o.order_id)));
    await source.close?.();
    await next.close?.();
  });

  it("continuous picks up new commits after a poll (injected pause)", async () => {
    const dir = fresh();
    await writeBronze(dir, format, "bronze-1", orders(0, 20));
    const ac = new AbortController();
    let polls = 0;
    const source = new LakeTableSource({
      path: join(dir, "bronze"),
      table: "bronze_orders",
      chunkSize: 5,
      sleep: async () => {
        polls++;
        if (polls === 1) await writeBronze(dir, format, "bronze-2", orders(20, 30));
        else ac.abort();
        return !ac.signal.aborted;
      },
    });
    const read = await drain(source, "continuous", ac.signal);
    expect(read.map((r) => (r.value as { order_id: string }).order_id)).toEqual(
      [...orders(0, 20), ...orders(20, 30)].filter((o) => o.amount >= 0).map((o) => o.order_id),
    );
    expect(polls).toBe(2);
    await source.close();
  });
});

describe("lake source on a parquet bronze that is being written", () => {
  it("reads only committed files while the writer holds the table and merges replace files", async () => {
    const dir = fresh();
    const contract = await loadContract(bronzeContract(dir, "parquet"));
    const writer = await openLake(contract);
    const good = (rows: ReturnType<typeof orders>): Row[] => rows.filter((o) => o.amount >= 0).map((o) => ({ ...o }));
    try {
      await writer.write({ batchId: 1, good: good(orders(0, 30)), bad: [] });
      const source = new LakeTableSource({ path: join(dir, "bronze"), table: "bronze_orders", chunkSize: 4 });
      const ac = new AbortController();
      const it = source.read({ mode: "continuous", signal: ac.signal })[Symbol.asyncIterator]();
      const seen: string[] = [];
      // Read part of the first batch, then bronze merges (rewriting the file under the reader).
      for (let i = 0; i < 6; i++) seen.push(((await it.next()).value as SourceRecord & { value: { order_id: string } }).value.order_id);
      await writer.write({ batchId: 2, good: good(orders(0, 5, 2)), bad: [] });
      const all = good(orders(0, 30)).length + good(orders(0, 5, 2)).length;
      while (seen.length < all) seen.push(((await it.next()).value as { value: { order_id: string } }).value.order_id);
      ac.abort();
      await it.return?.();
      // Rows 0..4 that were read before the merge come again (changed); those read after it, once.
      const updated = new Set(good(orders(0, 5, 2)).map((o) => String(o["order_id"])));
      const counts = new Map<string, number>();
      for (const id of seen) counts.set(id, (counts.get(id) ?? 0) + 1);
      for (const [id, c] of counts) expect(c, id).toBe(updated.has(id) ? 2 : 1);
      expect(new Set(seen)).toEqual(new Set(good(orders(0, 30)).map((o) => o["order_id"])));
    } finally {
      await writer.close();
    }
  });
});

const CHILD = (name: string) => fileURLToPath(new URL(`./${name}`, import.meta.url));

/** Spawn a test child under tsx; `lines` gets each line it prints. */
function child(script: string, args: string[], lines: (line: string) => void = () => undefined) {
  const proc = spawn(process.execPath, ["--import", import.meta.resolve("tsx"), CHILD(script), ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  let buffered = "";
  proc.stdout.on("data", (d: Buffer) => {
    buffered += d.toString();
    let i;
    while ((i = buffered.indexOf("\n")) >= 0) {
      lines(buffered.slice(0, i));
      buffered = buffered.slice(i + 1);
    }
  });
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    proc.on("exit", (code, signal) => resolve({ code, signal, stderr })),
  );
  return { proc, exit };
}

describe("lake source beside a bronze writer in another process", () => {
  it("duckdb: refused with the fix named, not a hang", async () => {
    const dir = fresh();
    let done!: () => void;
    const written = new Promise<void>((r) => (done = r));
    const bronze = child("lake-bronze-child.ts", [dir, "duckdb", "0", "10", "5", "hold"], (l) => l === "done" && done());
    try {
      const exited = bronze.exit.then((e) => {
        throw new Error(`bronze child exited early: ${e.stderr}`);
      });
      await Promise.race([written, exited]);
      const source = new LakeTableSource({ path: join(dir, "bronze"), table: "bronze_orders" });
      await expect(drain(source)).rejects.toThrow(/another process.*Run the two in sequence.*parquet/s);
    } finally {
      bronze.proc.kill("SIGKILL");
      await bronze.exit;
    }
  });

  it("parquet: silver reads every committed row, once and in order, while bronze writes", async () => {
    const dir = fresh();
    const bronze = child("lake-bronze-child.ts", [dir, "parquet", "0", "300", "5"]);
    let exited = false;
    void bronze.exit.then(() => (exited = true));
    const ac = new AbortController();
    let final = false;
    const source = new LakeTableSource({
      path: join(dir, "bronze"),
      table: "bronze_orders",
      chunkSize: 8,
      // Poll until the writer is gone, then once more to take its last commit.
      sleep: async (_ms, signal) => {
        if (final) ac.abort();
        if (exited) final = true;
        await new Promise((r) => setTimeout(r, 5));
        return !signal.aborted;
      },
    });
    const read = await drain(source, "continuous", ac.signal);
    const result = await bronze.exit;
    expect(result.code, result.stderr).toBe(0);
    const ids = read.map((r) => (r.value as { order_id: string }).order_id);
    expect(ids).toEqual(orders(0, 300).filter((o) => o.amount >= 0).map((o) => o.order_id));
    const seqs = read.map((r) => (r.position as { seq: number }).seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  });
});

describe.each(["duckdb", "parquet"] as const)("silver from a %s bronze under SIGKILL", (format) => {
  it("resumes with nothing lost and nothing read twice: in = good + quarantined", async () => {
    const dir = fresh();
    const bronze = await child("lake-bronze-child.ts", [dir, format, "0", "240", "40"]).exit;
    expect(bronze.code, bronze.stderr).toBe(0);
    let totals: { sourceCount: number; goodCount: number; badCount: number } | undefined;
    let kills = 0;
    for (let attempt = 0; attempt < 6 && !totals; attempt++) {
      // The first runs are killed at their k-th write (after k-1 commits, before the next one); then one finishes.
      const killAt = attempt < 3 ? attempt + 2 : Infinity;
      let writes = 0;
      const silver = child("lake-silver-child.ts", [dir, format, "20"], (line) => {
        if (line.startsWith("written ") && ++writes === killAt) silver.proc.kill("SIGKILL");
        if (line.startsWith("done ")) totals = (JSON.parse(line.slice(5)) as { totals: typeof totals }).totals;
      });
      const result = await silver.exit;
      if (result.signal === "SIGKILL") kills++;
      else expect(result.code, result.stderr).toBe(0);
    }
    expect(kills).toBeGreaterThan(0);
    expect(totals).toBeDefined();
    const t = await tables(dir, format);
    // Every bronze row was read exactly once across the killed and resumed runs.
    expect(totals!.sourceCount).toBe(t.bronze.length);
    expect(totals!.goodCount + totals!.badCount).toBe(totals!.sourceCount);
    expect(t.silver.length).toBe(totals!.goodCount);
    expect(t.silverBad.length).toBe(totals!.badCount);
    const silverIds = [...t.silver.map((r) => String(r["order_id"])), ...t.silverBad.map((q) => (q.record as { order_id: string }).order_id)];
    expect(silverIds.length).toBe(new Set(silverIds).size);
    expect(new Set(silverIds)).toEqual(new Set(t.bronze.map((r) => String(r["order_id"]))));
  }, 180_000);
});

describe("lakelogic run contracts/silver_orders.yaml after contracts/bronze_orders.yaml", () => {
  const BIN = fileURLToPath(new URL("../../bin/lakelogic.js", import.meta.url));
  const CONTRACTS = fileURLToPath(new URL("../../contracts/", import.meta.url));

  async function lakelogic(cwd: string, ...args: string[]): Promise<{ sourceCount: number; goodCount: number; badCount: number }> {
    const proc = spawn(process.execPath, [BIN, "run", ...args, "--json"], { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    proc.stdout.on("data", (d: Buffer) => (out += d.toString()));
    proc.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => proc.on("exit", resolve));
    expect(code, err).toBe(0);
    return JSON.parse(out) as { sourceCount: number; goodCount: number; badCount: number };
  }

  function shopOrders(from: number, to: number): string {
    const statuses = ["placed", "paid", "shipped", "delivered", "cancelled", "refunded"];
    const lines: string[] = [];
    for (let i = from; i < to; i++) {
      lines.push(
        JSON.stringify({
          order_id: `o${i}`,
          customer_id: `c${i % 7}`,
          amount: (i * 3.5).toFixed(2),
          // Every 13th has a currency bronze refuses.
          currency: i % 13 === 5 ? "XXX" : ["EUR", "USD", "GBP"][i % 3],
          status: statuses[i % 6],
          email: `u${i}@example.com`,
          created_at: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString(),
          items: [{ sku: `s${i}`, quantity: 1, unit_price: 1 }],
        }),
      );
    }
    return `${lines.join("\n")}\n`;
  }

  it("reads the bronze table the bronze contract wrote, then only what bronze added", async () => {
    const dir = fresh();
    writeFileSync(join(dir, "a.ndjson"), shopOrders(0, 50));
    writeFileSync(join(dir, "b.ndjson"), shopOrders(50, 80));
    const bronze = join(CONTRACTS, "bronze_orders.yaml");
    const silver = join(CONTRACTS, "silver_orders.yaml");
    const b1 = await lakelogic(dir, bronze, "--source", JSON.stringify({ type: "file", path: "a.ndjson" }), "--checkpoint-key", "bronze::a");
    expect(b1.badCount).toBeGreaterThan(0);
    const s1 = await lakelogic(dir, silver);
    expect(s1.sourceCount).toBe(b1.goodCount);
    expect(s1.goodCount + s1.badCount).toBe(s1.sourceCount);
    const b2 = await lakelogic(dir, bronze, "--source", JSON.stringify({ type: "file", path: "b.ndjson" }), "--checkpoint-key", "bronze::b");
    const s2 = await lakelogic(dir, silver);
    expect(s2.sourceCount).toBe(b2.goodCount);
  }, 120_000);
});
