import { describe, expect, it } from "vitest";
import { lintText, RULES, severityRank, type Finding } from "../../src/lint/index.js";

const ids = (findings: Finding[]): string[] => findings.map((f) => f.id);
const lint = (yaml: string): Finding[] => lintText(yaml, "c.yaml");
const only = (yaml: string, id: string): Finding[] => lint(yaml).filter((f) => f.id === id);
/** 1-based line of the first line that starts with `prefix` (so expectations do not hard-code counts). */
const lineOf = (yaml: string, prefix: string): number => yaml.split("\n").findIndex((l) => l.startsWith(prefix)) + 1;

/** A safe batch contract to vary one key at a time. */
function contract(parts: {
  source?: string;
  trigger?: string;
  strategy?: string | null;
  pk?: string | null;
  quarantine?: string;
  extra?: string;
}): string {
  const lines = ["version: 1.0.0", "dataset: orders"];
  if (parts.pk !== null) lines.push(`primary_key: ${parts.pk ?? "[order_id]"}`);
  if (parts.source) lines.push("source:", `  type: ${parts.source}`);
  if (parts.trigger) lines.push(`trigger: ${parts.trigger}`);
  lines.push("model:", "  fields:", "    - { name: order_id, type: string, required: true }");
  if (parts.strategy !== null) lines.push("materialization:", `  strategy: ${parts.strategy ?? "merge"}`);
  if (parts.quarantine) lines.push(parts.quarantine);
  if (parts.extra) lines.push(parts.extra);
  return lines.join("\n") + "\n";
}

describe("rule catalogue", () => {
  it("has unique ids and names, and every rule is documented", () => {
    expect(new Set(RULES.map((r) => r.id)).size).toBe(RULES.length);
    expect(new Set(RULES.map((r) => r.name)).size).toBe(RULES.length);
    for (const r of RULES) {
      expect(r.id).toMatch(/^[A-Z]+-\d{3}$/);
      expect(r.name).toMatch(/^[A-Z][A-Za-z]+$/);
      expect(r.title.length).toBeGreaterThan(5);
      expect(r.description.length).toBeGreaterThan(40);
      expect(r.fix.length).toBeGreaterThan(10);
    }
  });

  for (const rule of RULES) {
    it(`${rule.id}: the bad example raises exactly this rule, the good one does not`, () => {
      // Advice (info) may come along — SPARK-001's continuous trigger is also STREAM-002's — nothing else.
      const bad = lint(rule.examples.bad).filter((f) => f.id === rule.id || severityRank(f.severity) >= severityRank("warning"));
      expect(ids(bad)).toEqual([rule.id]);
      const good = lint(rule.examples.good);
      expect(ids(good)).not.toContain(rule.id);
      // A corrected example may still carry advice (info), never a warning or worse.
      expect(good.filter((f) => severityRank(f.severity) >= severityRank("warning"))).toEqual([]);
    });
  }
});

describe("STREAM-001 append on a streaming source", () => {
  const streaming = ["kafka", "sse", "websocket", "sqs", "pubsub", "servicebus", "eventgrid", "webhook", "eventhubs", "kinesis"];

  for (const type of streaming) {
    it(`fires for source.type ${type} with append (and in upper case)`, () => {
      expect(ids(only(contract({ source: type, strategy: "append" }), "STREAM-001"))).toEqual(["STREAM-001"]);
      expect(ids(only(contract({ source: type.toUpperCase(), strategy: "append" }), "STREAM-001"))).toEqual([
        "STREAM-001",
      ]);
    });
  }

  it("accepts spelling variants of transports (Event_Hubs, server-sent-events, ws)", () => {
    for (const type of ["Event_Hubs", "server-sent-events", "ws", "Azure Service Bus"]) {
      expect(ids(only(contract({ source: JSON.stringify(type), strategy: "append" }), "STREAM-001"))).toEqual([
        "STREAM-001",
      ]);
    }
  });

  it("finds the transport under the generic type: stream (options.kind)", () => {
    const yaml = contract({
      source: "stream\n  options:\n    kind: kafka\n    topic: orders",
      strategy: "append",
    });
    const [f] = only(yaml, "STREAM-001");
    expect(f?.message).toContain("source.options.kind: kafka");
  });

  for (const trigger of ["available_now", "continuous", "micro_batch", "AvailableNow", "processing_time"]) {
    it(`fires for a file source under trigger ${trigger}`, () => {
      expect(ids(only(contract({ source: "file", trigger, strategy: "append" }), "STREAM-001"))).toEqual([
        "STREAM-001",
      ]);
    });
  }

  it("reads the trigger wherever real contracts put it", () => {
    const placements = [
      "streaming:\n  trigger: available_now",
      "source:\n  type: file\n  trigger: available_now",
      "source:\n  type: file\n  options:\n    trigger: available_now",
      "materialization:\n  strategy: append\n  trigger: micro_batch",
      "trigger:\n  mode: continuous",
    ];
    for (const extra of placements) {
      const yaml = ["dataset: x", "primary_key: [id]", extra, extra.startsWith("materialization") ? "" : "materialization:\n  strategy: append"].join("\n");
      expect(ids(only(yaml, "STREAM-001")), extra).toEqual(["STREAM-001"]);
    }
  });

  it("counts a missing strategy as append and points at materialization, else at the reason", () => {
    const noStrategy = "dataset: x\nsource:\n  type: kafka\nmaterialization:\n  format: duckdb\n";
    const [a] = only(noStrategy, "STREAM-001");
    expect(a).toMatchObject({ line: 4, column: 1, path: "materialization" });
    expect(a?.message).toContain("No materialization.strategy");

    const noMaterialization = "dataset: x\nsource:\n  type: kafka\n";
    const [b] = only(noMaterialization, "STREAM-001");
    expect(b).toMatchObject({ line: 3, column: 3, path: "source.type" });
  });

  it("points at materialization.strategy when append is written", () => {
    const yaml = contract({ source: "kafka", strategy: "append" });
    const [f] = only(yaml, "STREAM-001");
    expect(f).toMatchObject({ line: lineOf(yaml, "  strategy:"), column: 3, path: "materialization.strategy", severity: "warning" });
  });

  it("does not fire for merge, overwrite or scd2, nor for batch sources", () => {
    for (const strategy of ["merge", "overwrite", "scd2", "MERGE"]) {
      expect(only(contract({ source: "kafka", strategy }), "STREAM-001")).toEqual([]);
    }
    expect(only(contract({ source: "file", strategy: "append" }), "STREAM-001")).toEqual([]);
    expect(only(contract({ source: "postgres", strategy: null }), "STREAM-001")).toEqual([]);
    expect(only(contract({ source: "file", trigger: "manual", strategy: "append" }), "STREAM-001")).toEqual([]);
  });

  it("suggests declaring a key only when there is none", () => {
    const [withKey] = only(contract({ source: "sqs", strategy: "append" }), "STREAM-001");
    expect(withKey?.suggestion).toContain("already declared");
    const [noKey] = only(contract({ source: "sqs", strategy: "append", pk: null }), "STREAM-001");
    expect(noKey?.suggestion).toContain("declare primary_key");
  });
});

describe("STREAM-002 continuous trigger", () => {
  it("fires as info on the trigger line, mentioning the freshness SLO", () => {
    const yaml = contract({ source: "kafka", trigger: "continuous", extra: "service_levels:\n  freshness: 15m" });
    const [f] = only(yaml, "STREAM-002");
    expect(f).toMatchObject({ severity: "info", line: lineOf(yaml, "trigger:"), column: 1, path: "trigger" });
    expect(f?.message).toContain("15m");
  });

  it("fires for a mapping trigger and for source.trigger", () => {
    expect(ids(only(contract({ source: "kafka", extra: "streaming:\n  trigger: { mode: Continuous }" }), "STREAM-002"))).toEqual([
      "STREAM-002",
    ]);
    expect(ids(only("dataset: x\nsource:\n  type: kafka\n  trigger: continuous\n", "STREAM-002"))).toEqual(["STREAM-002"]);
  });

  it("does not fire for other triggers", () => {
    for (const trigger of ["available_now", "micro_batch", "processing_time"]) {
      expect(only(contract({ source: "kafka", trigger }), "STREAM-002")).toEqual([]);
    }
  });
});

describe("STREAM-003 streaming without quarantine", () => {
  it("fires on quarantine.enabled: false, pointing at enabled", () => {
    const yaml = contract({ source: "kafka", quarantine: "quarantine:\n  enabled: false" });
    const [f] = only(yaml, "STREAM-003");
    expect(f).toMatchObject({ severity: "warning", line: lineOf(yaml, "  enabled:"), column: 3, path: "quarantine.enabled" });
  });

  it('fires on quarantine: null, quarantine: false and enabled: "false"', () => {
    for (const q of ["quarantine: null", "quarantine:", "quarantine: false", 'quarantine:\n  enabled: "false"']) {
      expect(ids(only(contract({ source: "sqs", quarantine: q }), "STREAM-003")), q).toEqual(["STREAM-003"]);
    }
  });

  it("does not fire when quarantine is left at its default or enabled", () => {
    expect(only(contract({ source: "kafka" }), "STREAM-003")).toEqual([]);
    expect(only(contract({ source: "kafka", quarantine: "quarantine:\n  target: q" }), "STREAM-003")).toEqual([]);
    expect(only(contract({ source: "kafka", quarantine: "quarantine:\n  enabled: true" }), "STREAM-003")).toEqual([]);
  });

  it("does not fire for batch contracts", () => {
    expect(only(contract({ source: "file", quarantine: "quarantine:\n  enabled: false" }), "STREAM-003")).toEqual([]);
  });
});

describe("STREAM-004 available_now without a replayable cursor", () => {
  for (const source of ["websocket", "webhook", "WebSocket", "ws"]) {
    it(`fires for ${source} + available_now, on the trigger`, () => {
      const yaml = contract({ source, trigger: "available_now" });
      const [f] = only(yaml, "STREAM-004");
      expect(f).toMatchObject({ severity: "warning", line: lineOf(yaml, "trigger:"), column: 1, path: "trigger" });
    });
  }

  it("does not fire for replayable sources or other triggers", () => {
    for (const source of ["kafka", "sse", "sqs", "pubsub"]) {
      expect(only(contract({ source, trigger: "available_now" }), "STREAM-004")).toEqual([]);
    }
    expect(only(contract({ source: "websocket", trigger: "continuous" }), "STREAM-004")).toEqual([]);
    expect(only(contract({ source: "websocket" }), "STREAM-004")).toEqual([]);
  });
});

describe("PK-002 merge without a primary key", () => {
  it("fires as critical on the strategy line, suggesting a likely key", () => {
    const yaml = contract({ source: "file", pk: null });
    const [f] = only(yaml, "PK-002");
    expect(f).toMatchObject({ severity: "critical", line: lineOf(yaml, "  strategy:"), column: 3, path: "materialization.strategy" });
    expect(f?.suggestion).toContain("primary_key: [order_id]");
  });

  it("fires for upsert and scd2, and points at an empty primary_key", () => {
    expect(ids(only(contract({ strategy: "scd2", pk: null }), "PK-002"))).toEqual(["PK-002"]);
    expect(ids(only(contract({ strategy: "Upsert", pk: null }), "PK-002"))).toEqual(["PK-002"]);
    const yaml = contract({ pk: "[]" });
    const [f] = only(yaml, "PK-002");
    expect(f).toMatchObject({ line: lineOf(yaml, "primary_key:"), column: 1, path: "primary_key" });
    expect(ids(only(contract({ pk: '[""]' }), "PK-002"))).toEqual(["PK-002"]);
  });

  it("does not fire with a key, or for append / overwrite", () => {
    expect(only(contract({}), "PK-002")).toEqual([]);
    expect(only(contract({ pk: "order_id" }), "PK-002")).toEqual([]);
    expect(only(contract({ strategy: "append", pk: null }), "PK-002")).toEqual([]);
    expect(only(contract({ strategy: "overwrite", pk: null }), "PK-002")).toEqual([]);
  });
});

describe("PARSE-000 unparseable or non-mapping files", () => {
  it("reports a syntax error at its position, and nothing else", () => {
    const findings = lint("dataset: x\nsource:\n  type: kafka\nprimary_key: [a, b\nmaterialization: {strategy: append}\n");
    expect(ids(findings)).toEqual(["PARSE-000"]);
    expect(findings[0]).toMatchObject({ severity: "critical", line: 5, column: 1 });
    expect(findings[0]?.message).toMatch(/^YAML syntax error: /);
    expect(findings[0]?.path).toBeUndefined();
  });

  it("reports duplicate keys and multiple documents", () => {
    const dup = lint("dataset: x\nmaterialization:\n  strategy: merge\n  strategy: append\n");
    expect(dup[0]).toMatchObject({ id: "PARSE-000", line: 4, column: 3 });
    expect(dup[0]?.message).toContain("unique");
    const multi = lint("dataset: x\n---\ndataset: y\n");
    expect(multi[0]).toMatchObject({ id: "PARSE-000", line: 2 });
  });

  it("reports empty files, lists and scalars at the top level", () => {
    expect(lint("")[0]).toMatchObject({ id: "PARSE-000", line: 1, column: 1 });
    expect(lint("# just a comment\n")[0]?.message).toContain("empty");
    expect(lint("\n\n- a\n- b\n")[0]).toMatchObject({ id: "PARSE-000", line: 3, column: 1 });
    expect(lint("- a\n")[0]?.message).toContain("a list");
    expect(lint("hello\n")[0]?.message).toContain("a string");
    expect(lint("42\n")[0]?.message).toContain("a number");
  });

  it("does not fire on a mapping", () => {
    expect(lint("dataset: x\n")).toEqual([]);
  });
});

describe("lintText", () => {
  it("returns findings sorted by line with the documented shape and key order", () => {
    const yaml = "dataset: x\nsource:\n  type: websocket\ntrigger: available_now\nquarantine:\n  enabled: false\n";
    const findings = lint(yaml);
    expect(ids(findings)).toEqual(["STREAM-001", "STREAM-004", "STREAM-003"]);
    expect(findings.map((f) => f.line)).toEqual([3, 4, 6]);
    expect(Object.keys(findings[0] ?? {})).toEqual(["id", "severity", "file", "line", "column", "path", "message", "suggestion"]);
    expect(findings[0]?.file).toBe("c.yaml");
  });

  it("never throws on odd but valid YAML (rules read defensively)", () => {
    const odd = [
      "source: kafka\nmaterialization: merge\n",
      "source: [kafka]\ntrigger: [continuous]\nprimary_key: 7\n",
      "source: { type: 42 }\nmaterialization: { strategy: 1 }\nquarantine: []\n",
      "model: { fields: [1, null, {name: 3}] }\nmaterialization: { strategy: merge }\n",
      "trigger: { mode: null }\nsource: { type: null, options: null }\n",
      "created: 2024-01-01\n",
    ];
    for (const yaml of odd) expect(() => lint(yaml), yaml).not.toThrow();
  });
});
