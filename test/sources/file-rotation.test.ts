/**
 * The file under a checkpoint replaced or rotated: every line arrives exactly once, or the run is
 * refused with a typed error — never a line skipped, cut, or quarantined for the wrong reason.
 * Restarts are real `lakelogic run` processes; continuous runs are driven by their commits.
 */
import { spawn } from "node:child_process";
import { appendFileSync, copyFileSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, truncateSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { orderEvent } from "../../examples/orders.js";
import { loadContract } from "../../src/contract/index.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { StreamSink } from "../../src/sink/index.js";
import { FileSource, type FileCursor } from "../../src/sources/file/source.js";
import { FileReplacedError } from "../../src/sources/file/errors.js";
import type { SourceRecord } from "../../src/sources/core/types.js";

const REPO = resolve(".");
const BIN = join(REPO, "bin", "lakelogic.js");
const dir = mkdtempSync(join(tmpdir(), "ll-rotate-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The demo contract, appending: a line delivered twice would be two rows. */
const CONTRACT = join(dir, "orders-append.yaml");
writeFileSync(CONTRACT, readFileSync(join(REPO, "examples", "orders.yaml"), "utf8").replace("strategy: merge", "strategy: append"));

/** Order events `from` ≤ id < `to`, every one valid, as JSON lines. */
const lines = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => `${JSON.stringify(orderEvent(from + k, 0))}\n`).join("");
const ids = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => from + k);

interface Summary {
  sourceCount: number;
  badCount: number;
  stoppedBy?: string;
  error?: { name: string; message: string };
}

/** One `lakelogic run` of the file into `target`, in its own process. */
function run(path: string, target: string, ...extra: string[]): Promise<{ code: number; summary: Summary; stderr: string }> {
  const args = [BIN, "run", CONTRACT, "--source", JSON.stringify({ type: "file", path }), "--target-path", target, "--batch-size", "25", "--json", ...extra];
  return new Promise((done, reject) => {
    const child = spawn(process.execPath, args, { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      try {
        done({ code: code ?? -1, summary: JSON.parse(stdout) as Summary, stderr });
      } catch {
        reject(new Error(`lakelogic run printed no summary (exit ${code}): ${stderr}`));
      }
    });
  });
}

/** Every order id in the table (sorted, repeats kept) and the quarantine. */
async function lake(target: string) {
  const contract = await loadContract(CONTRACT);
  const good = await readTable(contract, { targetPath: target });
  const bad = await readQuarantine(contract, { targetPath: target });
  return { good: good.map((r) => Number(r.order_id)).sort((a, b) => a - b), bad };
}

function setUp(name: string) {
  const sub = mkdtempSync(join(dir, `${name}-`));
  return { path: join(sub, "app.log"), target: join(sub, "lake") };
}

describe("file source: rotation and replacement across a restart (lakelogic run processes)", () => {
  it.each([
    ["renamed over it", (path: string, text: string) => (writeFileSync(`${path}.new`, text), renameSync(`${path}.new`, path))],
    ["rewritten in place", (path: string, text: string) => writeFileSync(path, text)],
  ])("a file replaced by a larger one (%s) is refused, naming the options that start over; nothing is read from the old offset", async (_how, replace) => {
    const { path, target } = setUp("replaced");
    writeFileSync(path, lines(0, 1000));
    expect((await run(path, target)).summary).toMatchObject({ sourceCount: 1000, badCount: 0 });

    replace(path, lines(1000, 5000));
    const refused = await run(path, target);
    expect(refused.code).toBe(1);
    expect(refused.summary).toMatchObject({ sourceCount: 0, stoppedBy: "error", error: { name: "FileReplacedError" } });
    expect(refused.summary.error!.message).toMatch(/--checkpoint-key.*--reset-checkpoint/);

    // Starting over on purpose reads the new file whole, once; no line was ever cut at the old
    // offset (and quarantined as "longer than maxRecordBytes").
    expect((await run(path, target, "--checkpoint-key", "orders-again")).summary).toMatchObject({ sourceCount: 4000, badCount: 0 });
    expect(await lake(target)).toEqual({ good: ids(0, 5000), bad: [] });
  });

  it("copytruncate: the lines after the checkpoint are read from the copy, then the truncated file from its start", async () => {
    const { path, target } = setUp("copytruncate");
    writeFileSync(path, lines(0, 100));
    expect((await run(path, target)).summary).toMatchObject({ sourceCount: 100 });
    appendFileSync(path, lines(100, 140)); // written, not yet read
    copyFileSync(path, `${path}.1`);
    truncateSync(path, 0);
    appendFileSync(path, lines(140, 240));

    expect((await run(path, target)).summary).toMatchObject({ sourceCount: 140, badCount: 0 });
    expect(await lake(target)).toEqual({ good: ids(0, 240), bad: [] });
  });

  it("rename rotation: the renamed file is finished, then the new file read from its start", async () => {
    const { path, target } = setUp("rename");
    writeFileSync(path, lines(0, 100));
    expect((await run(path, target)).summary).toMatchObject({ sourceCount: 100 });
    appendFileSync(path, lines(100, 140));
    renameSync(path, `${path}.1`);
    writeFileSync(path, lines(140, 240));

    expect((await run(path, target)).summary).toMatchObject({ sourceCount: 140, badCount: 0 });
    // And the next run has nothing new: its cursor is in the new file.
    expect((await run(path, target)).summary).toMatchObject({ sourceCount: 0 });
    expect(await lake(target)).toEqual({ good: ids(0, 240), bad: [] });
  });
});

/** A StreamSink following `path` until `done` says so after a commit; `onCommit` acts on the committed count. */
async function follow(path: string, target: string, onCommit: (committed: number) => void, done: (cursor: FileCursor) => boolean) {
  const stop = new AbortController();
  let committed = 0;
  const source = new FileSource(path, { idleBackoffMs: { initial: 1, max: 10 } });
  const summary = await new StreamSink(CONTRACT, source, {
    targetPath: target,
    batchSize: 20,
    maxWaitMs: 50,
    signal: stop.signal,
    onBatch: (b) => {
      committed += b.sourceCount;
      onCommit(committed);
      if (done(b.cursor as FileCursor)) stop.abort();
    },
  }).run("continuous");
  return summary;
}

/** The cursor is at the end of the file now at `path` (the new one, after a rotation). */
const atEndOf = (path: string) => (c: FileCursor) => {
  const st = statSync(path, { bigint: true });
  return c.ino === String(st.ino) && c.offset === Number(st.size);
};

describe("file source: rotation during a continuous run", () => {
  it("rename rotation: the follower finishes the renamed file (lines its writer still appends) and goes on with the new one", async () => {
    const { path, target } = setUp("follow-rename");
    writeFileSync(path, lines(0, 100));
    let rotated = false;
    const summary = await follow(
      path,
      target,
      (committed) => {
        if (rotated || committed < 100) return;
        rotated = true;
        appendFileSync(path, lines(100, 120));
        renameSync(path, `${path}.1`);
        appendFileSync(`${path}.1`, lines(120, 140)); // the writer had the file open
        writeFileSync(path, lines(140, 240));
      },
      (c) => rotated && atEndOf(path)(c),
    );
    expect(summary).toMatchObject({ sourceCount: 240, badCount: 0 });
    expect(await lake(target)).toEqual({ good: ids(0, 240), bad: [] });
  });

  it("copytruncate: the follower reads what only the copy holds, then the truncated file from its start", async () => {
    const { path, target } = setUp("follow-copytruncate");
    writeFileSync(path, lines(0, 100));
    let rotated = false;
    const summary = await follow(
      path,
      target,
      (committed) => {
        if (rotated || committed < 100) return;
        rotated = true;
        appendFileSync(path, lines(100, 140));
        copyFileSync(path, `${path}.1`);
        truncateSync(path, 0);
        appendFileSync(path, lines(140, 240));
      },
      (c) => rotated && atEndOf(path)(c),
    );
    expect(summary).toMatchObject({ sourceCount: 240, badCount: 0 });
    expect(await lake(target)).toEqual({ good: ids(0, 240), bad: [] });
  });
});

const signal = new AbortController().signal;

/** Every record from `cursor` to the end snapshot, with the cursor after each. */
async function drainFrom(path: string, cursor: FileCursor | undefined) {
  const src = new FileSource(path, { chunkBytes: 1024, onWarning: () => undefined });
  await src.seek(cursor);
  await src.endCursor();
  const out: Array<{ id: number; cursor: FileCursor }> = [];
  for await (const r of src.read({ mode: "available_now", signal })) out.push({ id: (r.value as { order_id: number }).order_id, cursor: src.currentCursor() });
  return out;
}

describe("file source: a crash at any record of a rotation resumes exactly after it", () => {
  it.each([
    ["rename", (path: string) => (renameSync(path, `${path}.1`), writeFileSync(path, lines(40, 60)))],
    ["copytruncate", (path: string) => (copyFileSync(path, `${path}.1`), truncateSync(path, 0), appendFileSync(path, lines(40, 60)))],
  ])("%s", async (_how, rotate) => {
    const { path } = setUp("crash");
    writeFileSync(path, lines(0, 20));
    const first = await drainFrom(path, undefined);
    appendFileSync(path, `${lines(20, 39)}${JSON.stringify(orderEvent(39, 0))}`); // the last line without its newline
    rotate(path);
    const from = first.at(-1)!.cursor;
    const rest = await drainFrom(path, from);
    // The renamed or copied file is finished (its last line has no newline), then the new file.
    expect(rest.map((r) => r.id)).toEqual(ids(20, 60));
    for (const [k, r] of rest.entries()) expect((await drainFrom(path, r.cursor)).map((x) => x.id)).toEqual(ids(21 + k, 60));
  });
});

describe("file source: a cursor that does not fit the file", () => {
  it("a cursor that lands inside a line of the file now is refused, never read as a too-long line's rest", async () => {
    const { path } = setUp("cut");
    writeFileSync(path, lines(0, 10));
    const src = new FileSource(path);
    // A cursor without the file's identity, 5 bytes into the second line.
    const inside = Buffer.byteLength(lines(0, 1)) + 5;
    await expect(src.seek({ offset: inside, line: 1 })).rejects.toThrow(FileReplacedError);
  });

  it("a file rotated twice since the checkpoint: the file the cursor names, then the path's; the one in between is named in a warning", async () => {
    const { path } = setUp("twice");
    writeFileSync(path, lines(0, 20));
    const first = await drainFrom(path, undefined);
    appendFileSync(path, lines(20, 30));
    renameSync(path, `${path}.1`);
    utimesSync(`${path}.1`, 1_000, 1_000);
    writeFileSync(path, lines(30, 40));
    renameSync(`${path}.1`, `${path}.2`);
    renameSync(path, `${path}.1`);
    writeFileSync(path, lines(40, 50));
    const warnings: string[] = [];
    const src = new FileSource(path, { onWarning: (m) => warnings.push(m) });
    await src.seek(first.at(-1)!.cursor);
    await src.endCursor();
    const got: number[] = [];
    for await (const r of src.read({ mode: "available_now", signal })) got.push((r.value as { order_id: number }).order_id);
    expect(got).toEqual([...ids(20, 30), ...ids(40, 50)]);
    expect(warnings).toEqual([expect.stringMatching(/app\.log\.2, and app\.log\.1 beside it was written after it: the file rotated more than once/)]);
  });

  it("a file truncated in place with no copy beside it is read from its start, with a warning", async () => {
    const { path } = setUp("truncated");
    writeFileSync(path, lines(0, 30));
    const first = await drainFrom(path, undefined);
    writeFileSync(path, lines(30, 35));
    const warnings: string[] = [];
    const src = new FileSource(path, { onWarning: (m) => warnings.push(m) });
    await src.seek(first.at(-1)!.cursor);
    const got: SourceRecord[] = [];
    for await (const r of src.read({ mode: "available_now", signal })) got.push(r);
    expect(got.map((r) => (r.value as { order_id: number }).order_id)).toEqual(ids(30, 35));
    expect(warnings).toEqual([expect.stringMatching(/was truncated .* no copy of its old content .* reading it from its beginning/)]);
  });
});
