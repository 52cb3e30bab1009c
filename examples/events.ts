/**
 * `npm run example:events -- [N] > events.ndjson` — N order events (default 10,000) as JSON
 * lines for `examples/orders.yaml`, about 5 % of them breaking one of its rules; the same N
 * always gives the same lines.
 */
import { orderEvents } from "./orders.js";

const arg = process.argv[2] ?? "10000";
const count = Number(arg);
if (!Number.isInteger(count) || count < 0) {
  process.stderr.write(`usage: npm run example:events -- [N] > events.ndjson   (N a whole number, got "${arg}")\n`);
  process.exit(2);
}
let chunk = "";
for (const event of orderEvents(count)) {
  chunk += JSON.stringify(event) + "\n";
  if (chunk.length > 1 << 20) {
    // Respect back-pressure: a pipe into a slow reader must not buffer the whole file.
    if (!process.stdout.write(chunk)) await new Promise((r) => process.stdout.once("drain", r));
    chunk = "";
  }
}
process.stdout.write(chunk);
