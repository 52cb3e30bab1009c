/**
 * `npm run example:events -- [N] [FILE]` — N order events (default 10,000) as JSON lines for
 * `examples/orders.yaml` into FILE (default events.ndjson), about 5 % of them breaking one of its
 * rules; the same N always gives the same lines. (A file argument, not `>`: `npm run` prints its
 * own header lines on stdout.)
 */
import { createWriteStream } from "node:fs";
import { orderEvents } from "./orders.js";

const [countArg = "10000", file = "events.ndjson"] = process.argv.slice(2);
const count = Number(countArg);
if (!Number.isInteger(count) || count < 0) {
  process.stderr.write(`usage: npm run example:events -- [N] [FILE]   (N a whole number, got "${countArg}")\n`);
  process.exit(2);
}
const out = createWriteStream(file);
let chunk = "";
for (const event of orderEvents(count)) {
  chunk += JSON.stringify(event) + "\n";
  if (chunk.length > 1 << 20) {
    // Respect back-pressure: the file is written as fast as the disk takes it, not buffered whole.
    if (!out.write(chunk)) await new Promise<void>((r) => out.once("drain", () => r()));
    chunk = "";
  }
}
await new Promise<void>((resolve, reject) => out.once("error", reject).end(chunk, () => resolve()));
process.stderr.write(`wrote ${count.toLocaleString("en")} order events to ${file}\n`);
