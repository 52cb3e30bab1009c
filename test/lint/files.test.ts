import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import { collectContractFiles, lintFiles, lintPaths } from "../../src/lint/index.js";

let dir: string;
const BAD = "dataset: x\nsource:\n  type: kafka\nmaterialization:\n  strategy: append\n";

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "lakelogic-lint-"));
  mkdirSync(join(dir, "nested", "deeper"), { recursive: true });
  mkdirSync(join(dir, ".hidden"));
  mkdirSync(join(dir, "node_modules"));
  writeFileSync(join(dir, "b.yaml"), BAD);
  writeFileSync(join(dir, "a.yml"), "dataset: ok\n");
  writeFileSync(join(dir, "nested", "deeper", "c.YAML"), BAD);
  writeFileSync(join(dir, "notes.txt"), "not: yaml: [");
  writeFileSync(join(dir, ".hidden", "h.yaml"), BAD);
  writeFileSync(join(dir, "node_modules", "n.yaml"), BAD);
  symlinkSync(join(dir, "nested"), join(dir, "loop"));
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("lintFiles", () => {
  it("walks directories for *.yaml / *.yml, sorted, skipping dot-folders, node_modules and symlinked dirs", async () => {
    const files = await collectContractFiles([dir]);
    expect(files).toEqual([join(dir, "a.yml"), join(dir, "b.yaml"), join(dir, "nested", "deeper", "c.YAML")]);
  });

  it("lints a file named explicitly whatever its extension, and drops duplicates", async () => {
    const files = await collectContractFiles([join(dir, "notes.txt"), dir, join(dir, "b.yaml")]);
    expect(files[0]).toBe(join(dir, "notes.txt"));
    expect(files.filter((f) => f.endsWith("b.yaml"))).toHaveLength(1);
  });

  it("returns every file's findings with the file as found", async () => {
    const report = await lintPaths([dir]);
    expect(report.files).toHaveLength(3);
    expect(report.findings.map((f) => [f.file, f.id])).toEqual([
      [join(dir, "b.yaml"), "STREAM-001"],
      [join(dir, "nested", "deeper", "c.YAML"), "STREAM-001"],
    ]);
    expect(await lintFiles([dir])).toEqual(report.findings);
  });

  it("throws a ConfigError for a path that does not exist", async () => {
    await expect(lintFiles([join(dir, "missing")])).rejects.toBeInstanceOf(ConfigError);
  });
});
