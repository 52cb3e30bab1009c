import { describe, expect, it } from "vitest";
import { collapseRepeats, createLogger, routeProcessWarnings, type LogFields, type Logger } from "../../src/observe/logger.js";

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

/** A logger that keeps what it is told, as `level msg fields`. */
function recording(): { logger: Logger; lines: Array<[string, string, LogFields]> } {
  const lines: Array<[string, string, LogFields]> = [];
  const at = (level: string) => (msg: string, fields: LogFields = {}) => void lines.push([level, msg, fields]);
  return { lines, logger: { error: at("error"), warn: at("warn"), info: at("info"), debug: at("debug"), enabled: () => true } };
}

describe("collapseRepeats", () => {
  it("says a condition once: its repeats, digits aside, and the lines that wrap it go to debug with their count", () => {
    const { logger, lines } = recording();
    const log = collapseRepeats(logger, { now: () => 0 });
    for (let retry = 0; retry < 10; retry++) {
      log.error("Connection error: connect ECONNREFUSED 127.0.0.1:1", { broker: "127.0.0.1:1" });
      log.error("Failed to connect to seed broker, trying another broker from the list: Connection error: connect ECONNREFUSED 127.0.0.1:1", { retryCount: retry });
    }
    log.warn("Connection error: connect ECONNREFUSED 127.0.0.1:1");
    log.error("Crash: KafkaJSNumberOfRetriesExceeded");
    expect(lines.filter(([level]) => level !== "debug")).toEqual([
      ["error", "Connection error: connect ECONNREFUSED 127.0.0.1:1", { broker: "127.0.0.1:1" }],
      // Another level is another condition, and so is another message.
      ["warn", "Connection error: connect ECONNREFUSED 127.0.0.1:1", {}],
      ["error", "Crash: KafkaJSNumberOfRetriesExceeded", {}],
    ]);
    const folded = lines.filter(([level]) => level === "debug");
    expect(folded).toHaveLength(19);
    expect(folded.at(-1)?.[2]).toMatchObject({ retryCount: 9, repeat: 19 });
  });

  it("says a condition that keeps recurring again after remindAfterMs, with the count of lines folded meanwhile", () => {
    const { logger, lines } = recording();
    let now = 0;
    const log = collapseRepeats(logger, { remindAfterMs: 1000, now: () => now });
    for (let i = 0; i < 5; i++, now += 300) log.warn(`reconnecting in ${i} s (failure ${i + 1})`);
    expect(lines.filter(([level]) => level === "warn")).toEqual([
      ["warn", "reconnecting in 0 s (failure 1)", {}],
      ["warn", "reconnecting in 4 s (failure 5)", { repeats: 3 }],
    ]);
    log.debug("detail");
    log.debug("detail");
    expect(lines.filter(([, msg]) => msg === "detail")).toHaveLength(2);
  });
});

describe("routeProcessWarnings", () => {
  it("logs each warning as one line (name, code, the message on one line), a repeat at debug, and gives Node's printing back", async () => {
    const { logger, lines } = recording();
    const before = process.listeners("warning");
    const held = Object.assign(new Error("raised before the routing"), { name: "Warning" });
    const restore = routeProcessWarnings(logger, [held]);
    try {
      const emitted = new Promise((resolve) => process.once("warning", resolve));
      process.emitWarning("checkpoint reset", { code: "LAKELOGIC_CHECKPOINT_RESET" });
      process.emitWarning("checkpoint reset", { code: "LAKELOGIC_CHECKPOINT_RESET" });
      process.emitWarning("NodeVersionSupportWarning: The AWS SDK will require\nnode >=22.");
      process.emitWarning("an old API", "DeprecationWarning", "DEP0999");
      await emitted;
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      restore();
    }
    expect(lines).toEqual([
      ["warn", "raised before the routing", {}],
      ["warn", "checkpoint reset", { code: "LAKELOGIC_CHECKPOINT_RESET" }],
      ["debug", "checkpoint reset", { code: "LAKELOGIC_CHECKPOINT_RESET", repeat: 1 }],
      // The AWS SDK's notice of its future Node.js support is not about this run.
      ["debug", "The AWS SDK will require node >=22.", { name: "NodeVersionSupportWarning" }],
      ["warn", "an old API", { name: "DeprecationWarning", code: "DEP0999" }],
    ]);
    expect(process.listeners("warning")).toEqual(before);
  });
});
