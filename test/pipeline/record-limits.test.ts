import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { orderEvent } from "../../examples/orders.js";
import { loadContract } from "../../src/contract/index.js";
import type { Contract } from "../../src/contract/types.js";
import { ConfigError } from "../../src/errors.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { StreamSink } from "../../src/sink/index.js";
import type { CursorSource, SourceRecord } from "../../src/sources/core/types.js";
import { IterableSource } from "../../src/sources/index.js";

const CONTRACT = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
function lakeDir(): string {
  const d = mkdtempSync(join(tmpdir(), "ll-limits-"));
  dirs.push(d);
  return d;
}

/** The demo contract, keeping undeclared keys (they are stored, not rejected). */
async function allowContract(): Promise<Contract> {
  const c = await loadContract(CONTRACT);
  return { ...c, schemaPolicy: { ...c.schemaPolicy, unknownFields: "allow" } };
}

function nested(depth: number): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  let at = root;
  for (let i = 1; i < depth; i++) {
    const next: Record<string, unknown> = {};
    at["a"] = next;
    at = next;
  }
  return root;
}

/** A cursor source over SourceRecords as given (raw payloads included). */
function recordsSource(records: SourceRecord[]): CursorSource {
  let i = 0;
  return {
    kind: "cursor",
    description: "records",
    async seek() {},
    currentCursor: () => i,
    async *read() {
      for (; i < records.length; ) yield records[i++]!;
    },
  };
}

async function lake(contract: Contract, targetPath: string) {
  return { good: await readTable(contract, { targetPath }), bad: await readQuarantine(contract, { targetPath }) };
}

describe("record limits: a deep, cyclic or oversized record is quarantined and the run goes on", () => {
  it("quarantines a record whose undeclared key is 10,000 levels deep, writes the rest", async () => {
    const contract = await allowContract();
    const target = lakeDir();
    const deep = { ...orderEvent(2), extra: nested(10_000) };
    const summary = await new StreamSink(contract, [orderEvent(1), deep, orderEvent(3)], {
      targetPath: target,
      checkpoint: "memory",
    }).run("available_now");
    expect(summary).toMatchObject({ sourceCount: 3, goodCount: 2, badCount: 1, stoppedBy: "end" });
    const { good, bad } = await lake(contract, target);
    expect(good.map((r) => Number(r["order_id"])).sort()).toEqual([1, 3]);
    expect(bad).toHaveLength(1);
    expect(bad[0]!.ruleIds).toEqual(["limit"]);
    expect(bad[0]!.reasons[0]).toMatch(/nested more than 64 levels deep/);
    expect(bad[0]!.position).toBe(1);
    // A bounded description of the record is kept: its declared fields as they were.
    expect(bad[0]!.record).toMatchObject({ order_id: 2, customer_id: deep.customer_id });
  });

  it("keeps the raw payload of a too-deep record that came as text", async () => {
    const contract = await allowContract();
    const target = lakeDir();
    const raw = `{"order_id":2,"extra":${"[".repeat(10_000)}${"]".repeat(10_000)}}`;
    const records: SourceRecord[] = [
      { value: orderEvent(1), raw: JSON.stringify(orderEvent(1)), position: 1 },
      { value: JSON.parse(raw) as unknown, raw, position: 2 },
      { value: orderEvent(3), raw: JSON.stringify(orderEvent(3)), position: 3 },
    ];
    const summary = await new StreamSink(contract, recordsSource(records), { targetPath: target, checkpoint: "memory" }).run(
      "available_now",
    );
    expect(summary).toMatchObject({ sourceCount: 3, goodCount: 2, badCount: 1 });
    const { bad } = await lake(contract, target);
    expect(bad).toHaveLength(1);
    expect(bad[0]).toMatchObject({ raw, ruleIds: ["limit"], position: 2 });
    expect(bad[0]!.record).toBeUndefined();
  });

  it("quarantines a cyclic object from an IterableSource without a crash", async () => {
    const contract = await allowContract();
    const target = lakeDir();
    const cyclic: Record<string, unknown> = { ...orderEvent(2) };
    cyclic["self"] = cyclic;
    const summary = await new StreamSink(contract, new IterableSource([orderEvent(1), cyclic, orderEvent(3)]), {
      targetPath: target,
      checkpoint: "memory",
    }).run("available_now");
    expect(summary).toMatchObject({ sourceCount: 3, goodCount: 2, badCount: 1, stoppedBy: "end" });
    const { bad } = await lake(contract, target);
    expect(bad[0]!.ruleIds).toEqual(["limit"]);
    expect(bad[0]!.reasons[0]).toMatch(/refers to itself \(a cycle\)/);
    expect(bad[0]!.record).toMatchObject({ order_id: 2, self: "[cycle]" });
  });

  it("quarantines a record over maxRecordBytes, with its raw payload, and writes the others", async () => {
    const contract = await loadContract(CONTRACT);
    const target = lakeDir();
    const big = { ...orderEvent(2), email: `${"x".repeat(5000)}@example.com` };
    const records: SourceRecord[] = [
      { value: orderEvent(1), raw: JSON.stringify(orderEvent(1)), position: 1 },
      { value: big, raw: JSON.stringify(big), position: 2 },
      { value: orderEvent(3), raw: JSON.stringify(orderEvent(3)), position: 3 },
    ];
    const summary = await new StreamSink(contract, recordsSource(records), {
      targetPath: target,
      checkpoint: "memory",
      maxRecordBytes: 4096,
    }).run("available_now");
    expect(summary).toMatchObject({ sourceCount: 3, goodCount: 2, badCount: 1 });
    const { bad } = await lake(contract, target);
    expect(bad[0]).toMatchObject({ raw: JSON.stringify(big), ruleIds: ["limit"], position: 2 });
    expect(bad[0]!.reasons[0]).toMatch(/larger than maxRecordBytes \(4096 bytes\)/);
  });

  it("quarantines an object without a payload whose JSON would be over maxRecordBytes", async () => {
    const contract = await loadContract(CONTRACT);
    const target = lakeDir();
    const big = { ...orderEvent(2), email: `${"x".repeat(5000)}@example.com` };
    const summary = await new StreamSink(contract, [orderEvent(1), big], {
      targetPath: target,
      checkpoint: "memory",
      maxRecordBytes: 4096,
    }).run("available_now");
    expect(summary).toMatchObject({ sourceCount: 2, goodCount: 1, badCount: 1 });
    const { bad } = await lake(contract, target);
    expect(bad[0]!.ruleIds).toEqual(["limit"]);
    expect(bad[0]!.reasons[0]).toMatch(/larger than maxRecordBytes/);
  });

  it("rejects a maxRecordBytes below 1, naming the option", () => {
    expect(() => new StreamSink(CONTRACT, [], { maxRecordBytes: 0 })).toThrow(ConfigError);
    expect(() => new StreamSink(CONTRACT, [], { maxRecordBytes: 0 })).toThrow(/maxRecordBytes: expected a whole number >= 1/);
  });
});
