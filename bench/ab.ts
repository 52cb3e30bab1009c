/**
 * Same-process A/B of two source trees on the validation benchmark's batches: each batch is
 * validated and written (merge into DuckDB, quarantine) by tree A and by tree B in turn, the order
 * alternating, so both see the same machine. On a shared machine whose speed swings by ±30 %
 * from one run to the next, separate runs of `bench/validate.ts` cannot show a 10 % change; this
 * can. Steps run one after the other (no overlap), so it compares work, not the pipeline.
 *
 *   git worktree add /tmp/before <commit> && ln -s "$PWD/node_modules" /tmp/before/node_modules
 *   npx tsx bench/ab.ts --a /tmp/before --b . [--batches 60] [--engine polars]
 *
 * Prints one JSON line per tree: mean milliseconds per 10,000-row batch for validation, for the
 * write, and of process CPU time (all threads), over all batches but the first four.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const { values: flags } = parseArgs({
  options: { a: { type: "string" }, b: { type: "string" }, batches: { type: "string", default: "60" }, engine: { type: "string", default: "duckdb" } },
});
if (!flags.a || !flags.b) throw new Error("usage: bench/ab.ts --a <tree> --b <tree> [--batches N] [--engine duckdb|polars]");
const engineName = flags.engine as "duckdb" | "polars";
const BATCH = 10_000;
const WARMUP = 4;
const batches = Number(flags.batches);

/** What this benchmark needs from a tree, loaded from that tree's own modules. */
interface Tree {
  label: string;
  root: string;
  contract: unknown;
  generateBatch(start: number, count: number): Array<Record<string, unknown>>;
  engine: { validate(records: unknown[], contract: unknown): Promise<Validated>; close(): Promise<void> };
  writer: { write(request: object): Promise<unknown>; close(): Promise<void> };
  defineLazy(target: object, key: string, get: () => unknown): object;
  dir: string;
  lastWrite: Date | null;
  ms: { validate: number; write: number; cpu: number };
}

interface Validated {
  good: unknown[];
  goodColumns?: unknown;
  bad: Array<{ record: unknown; errors: unknown[]; index: number }>;
}

async function load(label: string, dir: string): Promise<Tree> {
  const root = resolve(dir);
  // Another tree's modules: typed by the little this benchmark uses of them.
  const from = <M>(path: string) => import(pathToFileURL(join(root, path)).href) as Promise<M>;
  const bench = await from<{ benchContract: unknown; generateBatch: Tree["generateBatch"] }>("bench/validate.ts");
  const { createEngine } = await from<{ createEngine: (kind: "duckdb" | "polars") => Promise<Tree["engine"]> }>("src/engine/index.ts");
  const { openLake } = await from<{ openLake: (contract: unknown, options: object) => Promise<Tree["writer"]> }>(
    "src/lake/index.ts",
  );
  const { defineLazy } = await from<Pick<Tree, "defineLazy">>("src/util/lazy.ts");
  const target = mkdtempSync(join(tmpdir(), `lakelogic-ab-${label}-`));
  return {
    label,
    root,
    contract: bench.benchContract,
    generateBatch: bench.generateBatch,
    engine: await createEngine(engineName),
    writer: await openLake(bench.benchContract, { targetPath: target }),
    defineLazy,
    dir: target,
    lastWrite: null,
    ms: { validate: 0, write: 0, cpu: 0 },
  };
}

const trees = [await load("A", flags.a), await load("B", flags.b)];
for (let b = 0; b < batches; b++) {
  const records = trees[0]!.generateBatch(b * BATCH, BATCH);
  for (const t of b % 2 === 0 ? trees : [...trees].reverse()) {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const result = await t.engine.validate(records, t.contract);
    const t1 = performance.now();
    // As src/pipeline/commit.ts builds it: rows only if the writer asks for them.
    const request = {
      batchId: b + 1,
      bad: result.bad.map((r) => ({ record: r.record, errors: r.errors, position: r.index + b * BATCH })),
      stream: { key: "ab", replay: "cursor", previousCommittedAt: t.lastWrite },
      ...(result.goodColumns ? { goodColumns: result.goodColumns } : {}),
    };
    t.defineLazy(request, "good", () => result.good);
    await t.writer.write(request);
    t.lastWrite = new Date();
    if (b < WARMUP) continue;
    const cpu = process.cpuUsage(cpu0);
    t.ms.validate += t1 - t0;
    t.ms.write += performance.now() - t1;
    t.ms.cpu += (cpu.user + cpu.system) / 1000;
  }
}
const measured = batches - WARMUP;
for (const t of trees) {
  await t.writer.close();
  await t.engine.close();
  rmSync(t.dir, { recursive: true, force: true });
  const per = (ms: number) => Number((ms / measured).toFixed(1));
  const line = { bench: "ab", engine: engineName, tree: t.label, root: t.root, batches: measured, batchSize: BATCH, validateMs: per(t.ms.validate), writeMs: per(t.ms.write), cpuMs: per(t.ms.cpu) };
  process.stdout.write(JSON.stringify(line) + "\n");
}
