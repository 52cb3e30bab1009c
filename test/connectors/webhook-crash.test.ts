import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { isBadOrder, orderEvent } from "../../examples/orders.js";
import { loadContract } from "../../src/contract/index.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";

/**
 * The crash proof for the webhook source (I8): senders post deliveries and retry until they get
 * 200, like Event Grid; the receiving StreamSink process is SIGKILLed right after writing a batch
 * and before committing it, with requests still open, then restarted on the same port. A 200 is
 * only ever sent after a commit, so every order ends up in the merge target exactly once.
 */
const N = 600;
const MIN_KILLS = 4;
const child = fileURLToPath(new URL("./webhook-child.ts", import.meta.url));
const contractPath = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const dirs: string[] = [];
let current: ChildProcess | undefined;
afterAll(() => {
  // Never leave a receiver running if the test failed halfway.
  if (current && current.exitCode === null && current.signalCode === null) current.kill("SIGKILL");
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** POST once; any failure (refused, reset, non-200) resolves to a status or the error code. */
function post(port: number, body: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = request(
      { host: "127.0.0.1", port, path: "/hook", method: "POST", headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
        res.on("error", () => resolve("reset"));
      },
    );
    req.on("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? "error"));
    req.end(body);
  });
}

describe("webhook crash safety (real process, SIGKILL between write and commit)", () => {
  it("every delivery answered 200 is committed; retried deliveries add no duplicates", async () => {
    const port = await freePort();
    const lake = mkdtempSync(join(tmpdir(), "lakelogic-webhook-crash-"));
    dirs.push(lake);
    const deliveries: unknown[][] = [];
    for (let i = 0; i < N; ) {
      const size = Math.min(1 + (deliveries.length % 7), N - i);
      deliveries.push(Array.from({ length: size }, (_, k) => orderEvent(i + k)));
      i += size;
    }

    let answered = 0;
    let failures = 0;
    const sendAll = async () => {
      let next = 0;
      const worker = async () => {
        while (next < deliveries.length) {
          const body = JSON.stringify(deliveries[next++]);
          for (;;) {
            const status = await post(port, body);
            if (status === 200) break;
            failures++;
            await new Promise((r) => setTimeout(r, 20));
          }
          answered++;
        }
      };
      await Promise.all(Array.from({ length: 6 }, worker));
    };

    let kills = 0;
    let finished = false;
    const sending = sendAll().then(() => {
      finished = true;
      current?.kill("SIGTERM");
    });
    let lastOutput = "";
    for (let round = 0; round < 40 && !finished; round++) {
      const killOnWrite = kills < MIN_KILLS ? 2 + (round % 3) : undefined;
      const p = spawn(process.execPath, ["--import", "tsx", child, String(port), lake, join(lake, "ckpt.sqlite")], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      current = p;
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
      const exitCode = await new Promise<number | null>((resolve) => p.on("exit", (code) => resolve(code)));
      lastOutput = output;
      if (killed) kills++;
      else if (!finished) throw new Error(`child exited on its own (exit ${exitCode}):\n${output}`);
    }
    await sending;
    expect(finished).toBe(true);
    expect(kills).toBeGreaterThanOrEqual(MIN_KILLS);
    expect(failures).toBeGreaterThan(0);
    expect(answered).toBe(deliveries.length);
    // The last process was stopped gracefully by SIGTERM.
    expect(lastOutput).toMatch(/^done signal \d+$/m);

    const contract = await loadContract(contractPath);
    const ids = (await readTable(contract, { targetPath: lake })).map((r) => Number(r.order_id));
    const good = [...Array(N).keys()].filter((i) => !isBadOrder(i));
    expect(ids.length).toBe(good.length);
    expect(new Set(ids)).toEqual(new Set(good));
    const badIds = (await readQuarantine(contract, { targetPath: lake })).map((r) => (r.record as { order_id: number }).order_id);
    expect(badIds.sort((a, b) => a - b)).toEqual([...Array(N).keys()].filter((i) => isBadOrder(i)));
  });
});
