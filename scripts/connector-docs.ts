/**
 * Regenerate the option tables in docs/connectors.md from the connectors' ComponentSpecs, so
 * the reference cannot drift from what `createSource` accepts.
 *
 * Each table sits between markers naming a registered source type:
 *
 *     <!-- options:sse -->
 *     …generated…
 *     <!-- /options:sse -->
 *
 * Usage: `npx tsx scripts/connector-docs.ts` rewrites the file; `--check` only reports
 * (exit 1) when a table is out of date. Markers for unknown types are an error.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { renderSpecMarkdown, sourceSpecs } from "../src/sources/connectors.js";

const file = fileURLToPath(new URL("../docs/connectors.md", import.meta.url));

export function renderConnectorDocs(text: string): { text: string; unknown: string[] } {
  const specs = new Map(sourceSpecs().map((s) => [s.type, s]));
  const unknown: string[] = [];
  const out = text.replace(/<!-- options:([a-z0-9-]+) -->\n[\s\S]*?<!-- \/options:\1 -->/g, (block, type: string) => {
    const spec = specs.get(type);
    if (!spec) {
      unknown.push(type);
      return block;
    }
    return `<!-- options:${type} -->\n${renderSpecMarkdown(spec)}<!-- /options:${type} -->`;
  });
  return { text: out, unknown };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const before = readFileSync(file, "utf8");
  const { text, unknown } = renderConnectorDocs(before);
  if (unknown.length > 0) {
    console.error(`docs/connectors.md: no registered source type ${unknown.map((u) => `"${u}"`).join(", ")}`);
    process.exit(1);
  }
  if (process.argv.includes("--check")) {
    if (text !== before) {
      console.error("docs/connectors.md: option tables are out of date; run npx tsx scripts/connector-docs.ts");
      process.exit(1);
    }
  } else if (text !== before) {
    writeFileSync(file, text);
    console.log("docs/connectors.md: option tables regenerated");
  }
}
