import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

/** docs/writing-a-source.md shows examples/own-source.ts and what it prints: both must stay true. */
const example = fileURLToPath(new URL("../../examples/own-source.ts", import.meta.url));
const page = readFileSync(fileURLToPath(new URL("../../docs/writing-a-source.md", import.meta.url)), "utf8");
const dir = mkdtempSync(join(tmpdir(), "ll-own-source-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("writing your own source", () => {
  it("the page shows the example as it is", () => {
    expect(page).toContain("```ts\n" + readFileSync(example, "utf8") + "```");
  });

  it("the example registers its source, drains it twice from the committed cursor, and prints what the page says", async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", import.meta.resolve("tsx"), example, dir]);
    expect(stdout).toBe("read 4: 2 good, 2 quarantined; cursor 4\nread 2: 2 good, 0 quarantined; cursor 6\ntable: 3 rows; quarantine: 2 rows (decode, range:amount)\n");
    const printed = /It prints:\n\n```\n([\s\S]*?)```/.exec(page)?.[1];
    expect(printed).toBe(stdout);
  });
});
