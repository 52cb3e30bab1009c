import { spawnSync } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeOrders } from "../temporal/support.js";
import { fileURLToPath } from "node:url";
import { ORDERS_CONTRACT, spawnCli } from "./support.js";

const tmp = mkdtempSync(join(tmpdir(), "lakelogic-trace-"));

interface OtlpSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
}

/** A local OTLP/HTTP receiver: POST /v1/traces with a JSON body (the exporter's default encoding). */
let server: Server;
let endpoint: string;
const spans: OtlpSpan[] = [];
const paths: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      paths.push(`${req.method} ${req.url} ${req.headers["content-type"]}`);
      const doc = JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }> };
      for (const rs of doc.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((done) => server.close(done));
  rmSync(tmp, { recursive: true, force: true });
});

describe("traces", () => {
  it("--otlp-endpoint exports one span per batch with its fetch, validate, write, commit and ack as children", async () => {
    const events = join(tmp, "events.ndjson");
    writeOrders(events, 0, 900);
    const cli = spawnCli(
      ["run", ORDERS_CONTRACT, "--source", JSON.stringify({ type: "file", path: events }), "--target-path", join(tmp, "lake"), "--batch-size", "300", "--otlp-endpoint", endpoint, "--json"],
      tmp,
    );
    const { code } = await cli.exited;
    expect(code, cli.stderr()).toBe(0);
    const summary = JSON.parse(cli.stdout()) as { batches: number };
    expect(summary.batches).toBe(3);
    expect(paths.every((p) => p.startsWith("POST /v1/traces application/json"))).toBe(true);

    const batches = spans.filter((s) => s.name === "lakelogic.batch");
    // The drain's last turn finds the end: a batch span with a fetch and nothing to write.
    const written = batches.filter((b) => spans.some((s) => s.parentSpanId === b.spanId && s.name === "lakelogic.write"));
    expect(written).toHaveLength(3);
    for (const batch of written) {
      expect(batch.parentSpanId ?? "").toBe("");
      const children = spans.filter((s) => s.parentSpanId === batch.spanId);
      expect(children.every((c) => c.traceId === batch.traceId)).toBe(true);
      expect(children.map((c) => c.name).sort()).toEqual(["lakelogic.ack", "lakelogic.commit", "lakelogic.fetch", "lakelogic.validate", "lakelogic.write"]);
      const records = children.find((c) => c.name === "lakelogic.fetch")!.attributes!.find((a) => a.key === "lakelogic.records")!.value;
      expect(Number(records.intValue)).toBe(300);
    }
    // Every stage span belongs to a batch.
    const stageNames = new Set(["lakelogic.fetch", "lakelogic.validate", "lakelogic.write", "lakelogic.commit", "lakelogic.ack"]);
    for (const s of spans.filter((x) => stageNames.has(x.name))) expect(batches.map((b) => b.spanId)).toContain(s.parentSpanId);
  });

  it("without the OpenTelemetry packages a stream runs untraced, and asking for OTLP export names the package to install", () => {
    const child = fileURLToPath(new URL("./no-otel-child.ts", import.meta.url));
    const r = spawnSync(process.execPath, ["--import", "tsx", child, ORDERS_CONTRACT, join(tmp, "no-otel-lake")], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim().split("\n").pop()!) as { sourceCount: number; otlp: { name?: string; message?: string } };
    expect(out.sourceCount).toBe(5);
    expect(out.otlp.name).toBe("MissingDependencyError");
    expect(out.otlp.message).toContain("npm install @opentelemetry/api");
  });
});
