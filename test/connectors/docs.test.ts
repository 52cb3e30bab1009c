import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { renderConnectorDocs } from "../../scripts/connector-docs.js";

describe("docs/connectors.md", () => {
  it("has option tables generated from the current specs (npx tsx scripts/connector-docs.ts)", () => {
    const text = readFileSync(fileURLToPath(new URL("../../docs/connectors.md", import.meta.url)), "utf8");
    const { text: regenerated, unknown } = renderConnectorDocs(text);
    expect(unknown).toEqual([]);
    expect(regenerated).toBe(text);
    for (const type of ["sse", "websocket", "webhook", "eventgrid-push"]) expect(text).toContain(`### \`${type}\``);
  });
});
