import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { execFileSync, spawn } from "node:child_process";
import { LakeBusyError, openLake } from "../../src/lake/index.js";
import { BAD_PER_BATCH, crashContract, expectedState } from "./fixtures/crash-data.js";
import { tempDir } from "./helpers.js";
import { seededRandom } from "../support/random.js";

/**
 * SIGKILL a real writer process in the middle of its writes, again and again, and check after
 * every kill that the lake holds exactly batches 1..k for some k — never part of a batch — with
 * k no older than the last batch the child reported committed.
 */
const ROUNDS = 6;
const ROWS = 4000;
const childScript = fileURLToPath(new URL("./fixtures/crash-writer.ts", import.meta.url));
const readScript = fileURLToPath(new URL("./fixtures/read-lake.ts", import.meta.url));

interface LakeState {
  rows: Array<{ id: number; batch: number }>;
  badBatchIds: number[];
  /** Distinct quarantine ids. */
  badIds: number;
  checkpointBatch: number | null;
}

/** Read the lake in another process, which lets go of the DuckDB file when it exits. */
function readLake(format: string, strategy: string, dir: string): LakeState {
  const out = execFileSync(process.execPath, ["--import", "tsx", readScript, format, strategy, dir], {
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
  });
  return JSON.parse(out) as LakeState;
}
const cleanups: Array<() => void> = [];
afterAll(() => cleanups.forEach((c) => c()));

interface Life {
  committed: number;
  writing: number;
  midWrite: boolean;
  output: string;
}

const random = seededRandom("lake crash");

/** Run the child; kill it at a random moment inside the write of its 2nd..4th batch of this life. */
function life(args: string[]): Promise<Life> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", childScript, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    const killAtLine = 2 + Math.floor(random() * 3);
    let lines = 0;
    let committed = 0;
    let writing = 0;
    let output = "";
    let pending = "";
    let timer: NodeJS.Timeout | undefined;
    child.stdout.on("data", (chunk: Buffer) => {
      pending += chunk.toString();
      output += chunk.toString();
      let nl: number;
      while ((nl = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        const [what, b, lastMs] = line.split(" ");
        if (what === "committed") committed = Number(b);
        if (what === "writing") {
          writing = Number(b);
          if (++lines === killAtLine && !timer) {
            // Uniform over the duration of the previous write: mostly lands inside this one.
            const delay = random() * Math.max(5, Number(lastMs));
            timer = setTimeout(() => child.kill("SIGKILL"), delay);
          }
        }
      }
    });
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      if (timer) clearTimeout(timer);
      if (signal !== "SIGKILL") reject(new Error(`child exited with ${code ?? signal}:\n${output}`));
      else resolve({ committed, writing, midWrite: writing > committed, output });
    });
  });
}

describe.each([
  ["duckdb", "append"],
  ["duckdb", "merge"],
  ["parquet", "append"],
  ["parquet", "merge"],
  ["delta", "append"],
  ["delta", "merge"],
  ["ducklake", "append"],
  ["ducklake", "merge"],
] as const)("SIGKILL during %s %s writes", (format, strategy) => {
  it(
    "leaves a consistent prefix of whole batches every time",
    async () => {
      const dir = tempDir(`crash-${format}-${strategy}`);
      cleanups.push(dir.cleanup);
      let k = 0;
      let midWrites = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const l = await life([format, strategy, dir.path, String(k + 1), String(ROWS)]);
        if (l.midWrite) midWrites++;

        const state = readLake(format, strategy, dir.path);
        const rows = state.rows;
        const seen = rows.reduce((m, r) => Math.max(m, Number(r.batch)), 0);
        // Durable: everything reported committed is there; nothing beyond the batch in flight.
        expect(seen).toBeGreaterThanOrEqual(l.committed);
        expect(seen).toBeLessThanOrEqual(l.writing);
        // Whole batches only: the table equals the state after exactly batches 1..seen.
        const expected = expectedState(strategy, seen, ROWS);
        expect(rows.length).toBe(expected.size);
        const wrong = rows.filter((r) => expected.get(Number(r.id)) !== Number(r.batch));
        expect(wrong).toEqual([]);
        // Each quarantine row once, however often its batch was written.
        expect(state.badIds).toBe(state.badBatchIds.length);
        if (format === "delta") {
          // Two tables, two commits: the quarantine commits first (idempotently), so it may hold
          // the batch in flight, and its replay adds nothing.
          const held = state.badBatchIds.length / BAD_PER_BATCH;
          expect([seen, seen + 1]).toContain(held);
          expect(Math.max(0, ...state.badBatchIds)).toBe(held);
        } else {
          // Quarantine committed with the same batches, no more, no less.
          expect(state.badBatchIds).toHaveLength(seen * BAD_PER_BATCH);
          expect(Math.max(0, ...state.badBatchIds)).toBe(seen);
        }
        if (format !== "parquet") expect(state.checkpointBatch).toBe(seen);
        k = seen;
      }
      expect(k).toBeGreaterThanOrEqual(ROUNDS);
      // The kills must actually have hit writes in progress, or this test proves little.
      expect(midWrites).toBeGreaterThan(0);
      console.log(`${format} ${strategy}: ${ROUNDS} kills, ${midWrites} during a write, ${k} batches survived`);
    },
    120_000,
  );
});

describe("a duckdb lake held by another process", () => {
  it("is refused with LakeBusyError, not a raw lock error", async () => {
    const dir = tempDir("busy");
    cleanups.push(dir.cleanup);
    const child = spawn(process.execPath, ["--import", "tsx", childScript, "duckdb", "append", dir.path, "1", "10"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on("data", (chunk: Buffer) => {
          if (chunk.toString().includes("committed")) resolve();
        });
        child.on("exit", (code) => reject(new Error(`child exited early with ${code}`)));
      });
      const err = await openLake(crashContract("duckdb", "append"), { targetPath: dir.path }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LakeBusyError);
      expect((err as Error).message).toMatch(/another process/);
    } finally {
      child.kill("SIGKILL");
      await new Promise((r) => child.once("exit", r));
    }
  });
});
