import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/observe/logger.js";

const at = new Date("2026-01-02T03:04:05.678Z");

describe("createLogger", () => {
  it("writes one JSON object per line with time, level, msg and fields", () => {
    const lines: string[] = [];
    const log = createLogger({ format: "json", level: "debug", write: (l) => lines.push(l), now: () => at });
    log.info("batch committed", { batch: 3, records: 500, lag: undefined, key: "stream::orders" });
    log.debug("detail", {});
    expect(lines.every((l) => l.endsWith("\n") && !l.slice(0, -1).includes("\n"))).toBe(true);
    expect(lines.map((l) => JSON.parse(l) as unknown)).toEqual([
      { time: at.toISOString(), level: "info", msg: "batch committed", fields: { batch: 3, records: 500, key: "stream::orders" } },
      { time: at.toISOString(), level: "debug", msg: "detail", fields: {} },
    ]);
  });

  it("writes text lines a person reads, quoting values with spaces, and drops levels below its own", () => {
    const lines: string[] = [];
    const log = createLogger({ level: "warn", write: (l) => lines.push(l), now: () => at });
    log.debug("hidden");
    log.info("hidden");
    log.warn("broker down; reconnecting", { connector: "kafka", reason: "ECONNREFUSED 127.0.0.1:1" });
    log.error("failed\nbadly");
    expect(lines).toEqual([
      `${at.toISOString()} WARN  broker down; reconnecting connector=kafka reason="ECONNREFUSED 127.0.0.1:1"\n`,
      `${at.toISOString()} ERROR failed badly\n`,
    ]);
    expect(log.enabled("info")).toBe(false);
    expect(log.enabled("error")).toBe(true);
  });

  it("refuses an unknown level or format, naming the option", () => {
    expect(() => createLogger({ level: "loud" as never })).toThrow(/logger\.level.*error, warn, info, debug/);
    expect(() => createLogger({ format: "xml" as never })).toThrow(/logger\.format.*text, json/);
  });
});
