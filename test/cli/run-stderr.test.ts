/**
 * What `lakelogic run` says on stderr — when it starts, when a signal stops it, a warning — and
 * the code it exits with: through the real command in a child process, as a user or a supervisor
 * sees it.
 */
import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../support/proc.js";
import { writeOrders } from "../temporal/support.js";
import { ORDERS_CONTRACT, jsonLines, spawnCli } from "../observe/support.js";

const tmp = mkdtempSync(join(tmpdir(), "lakelogic-run-stderr-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Complete JSON log lines so far (the last, partial one is left for later). */
const logsSoFar = (stderr: string) => jsonLines(stderr.slice(0, stderr.lastIndexOf("\n") + 1));

describe("lakelogic run: start and stop", () => {
  it.each([
    ["SIGINT", 130],
    ["SIGTERM", 143],
  ] as const)("says where it starts, and on %s that it stops after the batch in flight, then exits %i", async (signal, exitCode) => {
    const events = join(tmp, `${signal}.ndjson`);
    writeOrders(events, 0, 600);
    const lake = join(tmp, `lake-${signal}`);
    const cli = spawnCli(
      ["run", ORDERS_CONTRACT, "--source", JSON.stringify({ type: "file", path: events }), "--mode", "continuous", "--target-path", lake, "--batch-size", "200", "--log-format", "json", "--json"],
      tmp,
    );
    await cli.waitForStderr((s) => (logsSoFar(s).filter((l) => l.msg === "batch committed").length === 3 ? true : undefined));
    cli.child.kill(signal);
    const { code } = await cli.exited;
    expect(code, cli.stderr()).toBe(exitCode);

    const logs = jsonLines(cli.stderr());
    expect(logs[0]).toMatchObject({
      level: "info",
      msg: "stream started",
      fields: {
        key: "stream::orders",
        mode: "continuous",
        source: `file ${events}`,
        cursor: "null",
        batch: 0,
        format: "duckdb",
        table: "orders",
        target: lake,
        checkpoint: join(lake, "_lakelogic", "checkpoints.sqlite"),
      },
    });
    expect(logs.at(-1)).toMatchObject({ level: "info", msg: "stopping after the batch in flight", fields: { key: "stream::orders", signal } });
    // Every stderr line is one of the logger's: no Node.js "Warning:" and no --trace-warnings hint.
    expect(cli.stderr()).not.toMatch(/Warning:|trace-warnings/);
    const summary = JSON.parse(cli.stdout()) as { stoppedBy: string; sourceCount: number };
    expect(summary).toMatchObject({ stoppedBy: "signal", sourceCount: 600 });
  });

  it("names an SSE source without its credentials, and says its reconnects once", async () => {
    // A loopback port nobody listens on: every connection attempt fails the same way.
    const port = await freePort();
    const source = {
      type: "sse",
      url: `http://127.0.0.1:${port}/stream?token=\${ENV:FEED_TOKEN}`,
      headers: { Authorization: "Bearer ${ENV:FEED_PASSWORD}" },
      retry: { initialDelayMs: 10, maxDelayMs: 20, jitter: 0 },
    };
    const cli = spawnCli(
      ["run", ORDERS_CONTRACT, "--source", JSON.stringify(source), "--mode", "continuous", "--checkpoint", "memory", "--target-path", join(tmp, "lake-sse"), "--log-format", "json", "--log-level", "debug"],
      tmp,
      { FEED_PASSWORD: "hunter2-password", FEED_TOKEN: "hunter2-token" },
    );
    // Count-based: wait until five reconnects were folded into debug.
    await cli.waitForStderr((s) => (logsSoFar(s).filter((l) => l.fields.connector === "SSE" && l.level === "debug").length >= 5 ? true : undefined));
    cli.child.kill("SIGINT");
    const { code } = await cli.exited;
    expect(code, cli.stderr()).toBe(130);

    const logs = jsonLines(cli.stderr());
    expect(logs.find((l) => l.msg === "stream started")?.fields).toMatchObject({ source: `sse http://127.0.0.1:${port}/stream?…`, cursor: "null", checkpoint: "memory" });
    expect(cli.stderr()).not.toContain("hunter2");
    // (A condition still going after some minutes is said again, with `repeats`: left aside here.)
    const said = logs.filter((l) => l.fields.connector === "SSE" && l.level === "warn" && l.fields.repeats === undefined);
    expect(said).toHaveLength(1);
    expect(said[0]!.msg).toMatch(new RegExp(`127\\.0\\.0\\.1:${port}.*; reconnecting in 0\\.0 s \\(failure 1\\)$`));
  });
});

describe("lakelogic run: process warnings", () => {
  it("are log lines of the command's logger (one each, with their code), never Node.js's Warning lines", async () => {
    const events = join(tmp, "unterminated.ndjson");
    writeOrders(events, 0, 10);
    // A last line without its newline yet: the file source warns that this run stops before it.
    appendFileSync(events, '{"order_id":"o-partial"');
    const cli = spawnCli(["run", ORDERS_CONTRACT, "--source", JSON.stringify({ type: "file", path: events }), "--target-path", join(tmp, "lake-warn"), "--log-format", "json", "--json"], tmp);
    const { code } = await cli.exited;
    expect(code, cli.stderr()).toBe(0);
    const warnings = jsonLines(cli.stderr()).filter((l) => l.level === "warn");
    expect(warnings).toEqual([
      expect.objectContaining({ msg: expect.stringMatching(/are a line with no newline yet; this run stops before it/), fields: { code: "LAKELOGIC_FILE" } }),
    ]);
    expect(cli.stderr()).not.toMatch(/Warning:|trace-warnings/);
  });
});
