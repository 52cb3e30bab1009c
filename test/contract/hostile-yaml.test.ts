import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ContractError, loadContract, parseContract } from "../../src/contract/index.js";
import { MAX_CONTRACT_BYTES, MAX_YAML_ALIAS_COUNT } from "../../src/contract/yaml.js";

const dir = mkdtempSync(join(tmpdir(), "lakelogic-hostile-yaml-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** "Billion laughs": nine levels of nine aliases, 9^9 strings once expanded. */
const ALIAS_BOMB = [
  "version: 1.0.0",
  "dataset: lol",
  'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
  ...["b", "c", "d", "e", "f", "g", "h", "i"].map((name, i) => {
    const prev = "abcdefgh"[i]!;
    return `${name}: &${name} [${Array.from({ length: 9 }, () => `*${prev}`).join(",")}]`;
  }),
  "model:",
  "  fields:",
  "    - {name: id, type: string}",
  "",
].join("\n");

async function refusal(run: () => unknown): Promise<ContractError> {
  let caught: unknown;
  try {
    await run();
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(ContractError);
  return caught as ContractError;
}

function contractWithFields(count: number): string {
  const lines = ["version: 1.0.0", "dataset: wide", "model:", "  fields:"];
  for (let i = 0; i < count; i++) lines.push(`    - name: field_${i}`, "      type: string", `      required: ${i % 2 === 0}`);
  lines.push("quality:", "  row_rules:", "    - not_null: field_0", "");
  return lines.join("\n");
}

describe("YAML aliases", () => {
  it("refuses an alias bomb given as text with a ContractError, not the yaml library's ReferenceError", async () => {
    const err = await refusal(() => parseContract(ALIAS_BOMB, "bomb.yaml"));
    expect(err.code).toBe("CONTRACT");
    expect(err.retriable).toBe(false);
    expect(err.file).toBe("bomb.yaml");
    expect(err.message).toContain(`at most ${MAX_YAML_ALIAS_COUNT}`);
    expect(err.message).toMatch(/^bomb\.yaml:\d+:\d+ /);
  });

  it("refuses an alias bomb file and names the file", async () => {
    const file = join(dir, "bomb.yaml");
    writeFileSync(file, ALIAS_BOMB);
    const err = await refusal(() => loadContract(file));
    expect(err.file).toBe(file);
    expect(err.message).toContain(file);
    expect(err.message).toContain("alias");
  });

  it("refuses an alias without its anchor as a ContractError at the alias", async () => {
    const err = await refusal(() => parseContract("version: 1.0.0\ndataset: x\nmodel:\n  fields: *nowhere\n", "u.yaml"));
    expect(err.message).toMatch(/^u\.yaml:4:11 .*\*nowhere/);
  });

  it("still loads a contract that uses a few aliases", async () => {
    const c = await loadContract(
      "version: 1.0.0\ndataset: x\nmodel:\n  fields:\n    - {name: a, type: &t string}\n    - {name: b, type: *t}\n",
    );
    expect(c.fields.map((f) => [f.name, f.type])).toEqual([
      ["a", "string"],
      ["b", "string"],
    ]);
  });
});

describe("contract size", () => {
  it(`refuses YAML text over ${MAX_CONTRACT_BYTES} bytes and names the limit`, async () => {
    const text = "version: 1.0.0\ndataset: big\ninfo:\n  description: " + "x".repeat(MAX_CONTRACT_BYTES) + "\n";
    const err = await refusal(() => parseContract(text, "big.yaml"));
    expect(err.file).toBe("big.yaml");
    expect(err.message).toContain(`${MAX_CONTRACT_BYTES} bytes`);
  });

  it("refuses a contract file over the limit and names the file and the limit", async () => {
    const file = join(dir, "big.yaml");
    writeFileSync(file, "version: 1.0.0\ndataset: big\ninfo:\n  description: " + "é".repeat(MAX_CONTRACT_BYTES / 2) + "\n");
    const err = await refusal(() => loadContract(file));
    expect(err.file).toBe(file);
    expect(err.message).toContain(file);
    expect(err.message).toContain(`${MAX_CONTRACT_BYTES} bytes`);
  });

  it("loads a contract of 20,000 fields", { timeout: 120_000 }, async () => {
    const file = join(dir, "wide.yaml");
    writeFileSync(file, contractWithFields(20_000));
    const c = await loadContract(file);
    expect(c.fields).toHaveLength(20_000);
    expect(c.fields[19_999]!.name).toBe("field_19999");
  });
});
