import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../support/proc.js";
import { ORDERS_CONTRACT, spawnCli } from "./support.js";

const tmp = mkdtempSync(join(tmpdir(), "lakelogic-kafka-logs-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("kafkajs's own log lines", () => {
  it("go through the logger as JSON lines on stderr, never as raw kafkajs JSON, one line per condition, and the run fails with stoppedBy error", async () => {
    // A port nobody listens on: kafkajs logs its connection errors, then the run fails.
    const port = await freePort();
    const source = { type: "kafka", brokers: [`127.0.0.1:${port}`], topic: "orders", groupId: "g", connectionTimeoutMs: 200, maxRetryTimeMs: 300, logLevel: "error" };
    const cli = spawnCli(["run", ORDERS_CONTRACT, "--source", JSON.stringify(source), "--checkpoint", "memory", "--target-path", join(tmp, "lake"), "--log-format", "json", "--log-level", "debug", "--json"], tmp);
    const { code } = await cli.exited;
    expect(code, cli.stderr()).toBe(1);

    const stdout = cli.stdout().trim().split("\n");
    expect(stdout).toHaveLength(1);
    const summary = JSON.parse(stdout[0]!) as { stoppedBy: string; error: { message: string } };
    expect(summary.stoppedBy).toBe("error");
    expect(summary.error.message).toContain(`127.0.0.1:${port}`);

    const lines = cli.stderr().trim().split("\n");
    // The command's last word is a plain line; every line before it is one of the logger's.
    expect(lines.at(-1)).toMatch(/^lakelogic run: /);
    const logs = lines.slice(0, -1).map((l) => JSON.parse(l) as { level: string; msg: string; fields: Record<string, unknown> });
    const kafka = logs.filter((l) => l.fields.source === "kafka");
    for (const l of kafka) expect(typeof l.fields.namespace).toBe("string");
    // kafkajs retries the connection 10 times and logs each attempt twice (the connection's
    // error, then the broker pool's around it): said once, the rest folded into debug.
    // (A condition still going after some minutes is said again, with `repeats`: left aside here.)
    const said = kafka.filter((l) => l.level !== "debug" && l.fields.repeats === undefined);
    expect(said.map((l) => [l.level, l.msg])).toEqual([["error", `Connection error: connect ECONNREFUSED 127.0.0.1:${port}`]]);
    const folded = kafka.filter((l) => l.level === "debug" && typeof l.fields.repeat === "number");
    expect(folded.length).toBeGreaterThanOrEqual(10);
    expect(logs.at(-1)).toMatchObject({ level: "error", msg: "run failed" });
  });
});
