import { describe, expect, it } from "vitest";
import { formatPath, parseYaml } from "../src/contract/yaml.js";

describe("parseYaml", () => {
  it("locates keys and list items by path", () => {
    const doc = parseYaml("a: 1\nb:\n  - x: 2\n    y: [1, 2]\n", "f.yaml");
    expect(doc.errors).toEqual([]);
    expect(doc.locate(["b", 0, "y"])).toEqual({ line: 4, column: 5 });
    expect(doc.locate(["b", 0])).toEqual({ line: 3, column: 5 });
    // A missing key falls back to the nearest existing ancestor.
    expect(doc.locate(["b", 0, "nope"])).toEqual({ line: 3, column: 5 });
  });

  it("reports syntax errors with a position and no data", () => {
    const doc = parseYaml("a: [1,\nb: 2");
    expect(doc.data).toBeUndefined();
    expect(doc.errors[0]?.line).toBe(2);
  });

  it("formats key paths", () => {
    expect(formatPath(["quality", "row_rules", 2, "sql"])).toBe("quality.row_rules[2].sql");
    expect(formatPath([])).toBe("<root>");
  });
});
