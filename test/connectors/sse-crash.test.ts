import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { isBadOrder, orderEvent } from "../../examples/orders.js";
import { loadContract } from "../../src/contract/index.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { ScriptedSSEServer, type LogEvent } from "./sse-server.js";

/**
 * The crash proof for SSE: SIGKILL a real StreamSink process right after it wrote a batch and
 * before it committed the event id, restart it, repeat; the feed meanwhile drops connections and
 * replays ids. Afterwards every order is in the merge target exactly once.
 */
const N = 1200;
const MIN_KILLS = 5;
const child = fileURLToPath(new URL("./sse-child.ts", import.meta.url));
const contractPath = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const dirs: string[] = [];
let running: ChildProcess | undefined;
afterAll(() => {
  if (running && running.exitCode === null && running.signalCode === null) running.kill("SIGKILL");
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
});

interface Life {
  output: string;
  killed: boolean;
  exitCode: number | null;
}

function life(args: string[], killOnWrite: number | undefined): Promise<Life> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["--import", "tsx", child, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    running = p;
    let output = "";
    let writes = 0;
    let killed = false;
    p.stdout.on("data", (c: Buffer) => {
      output += c.toString();
      writes += (c.toString().match(/^written /gm) ?? []).length;
      if (killOnWrite !== undefined && writes >= killOnWrite && !killed) {
        killed = true;
        p.kill("SIGKILL");
      }
    });
    p.stderr.on("data", (c: Buffer) => (output += c.toString()));
    p.on("error", reject);
    p.on("exit", (exitCode) => resolve({ output, killed, exitCode }));
  });
}

describe("SSE crash safety (real process, SIGKILL between write and commit)", () => {
  it("ends with every order exactly once after repeated kills", async () => {
    const log: LogEvent[] = [];
    for (let i = 0; i < N; i++) {
      log.push(i % 9 === 4 ? { data: JSON.stringify(orderEvent(i)) } : { id: `o${i}`, data: JSON.stringify(orderEvent(i)) });
      if (i % 13 === 0) log.push({ event: "ping", data: "{}" });
    }
    // Every other connection drops partway; every connection resumes two ids early.
    const server = await new ScriptedSSEServer(log, (n) => (n % 2 === 1 ? { dropAfter: 170, repeat: 2 } : { repeat: 2 })).start();
    const lake = mkdtempSync(join(tmpdir(), "lakelogic-sse-crash-"));
    dirs.push(lake);
    try {
      let kills = 0;
      let done = false;
      const resumedFrom: string[] = [];
      for (let round = 0; round < 40 && !done; round++) {
        const killOnWrite = kills < MIN_KILLS ? 1 + (round % 3) : undefined;
        const l = await life([server.url, lake, join(lake, "ckpt.sqlite")], killOnWrite);
        if (l.killed) {
          kills++;
          continue;
        }
        if (l.exitCode !== 0) throw new Error(`child failed (exit ${l.exitCode}):\n${l.output}`);
        const m = /^done (\S+) (\S+)$/m.exec(l.output);
        expect(m).not.toBeNull();
        expect(JSON.parse(m![1]!)).toBe(`o${N - 1}`);
        resumedFrom.push(JSON.parse(m![2]!) as string);
        done = true;
      }
      expect(done).toBe(true);
      expect(kills).toBeGreaterThanOrEqual(MIN_KILLS);
      // The finishing run resumed from a committed id, and sent it as Last-Event-ID.
      expect(server.seen.some((s) => s.lastEventId === resumedFrom[0])).toBe(true);

      const contract = await loadContract(contractPath);
      const ids = (await readTable(contract, { targetPath: lake })).map((r) => Number(r.order_id));
      const good = [...Array(N).keys()].filter((i) => !isBadOrder(i));
      expect(ids.length).toBe(good.length);
      expect(new Set(ids)).toEqual(new Set(good));
      const badIds = (await readQuarantine(contract, { targetPath: lake })).map((r) => (r.record as { order_id: number }).order_id);
      expect(badIds.sort((a, b) => a - b)).toEqual([...Array(N).keys()].filter((i) => isBadOrder(i)));
    } finally {
      await server.stop();
    }
  });
});
