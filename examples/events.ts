/**
 * `npm run example:events -- [N] [FILE]` — N order events (default 10,000) as JSON lines for
 * `examples/orders.yaml` into FILE (default events.ndjson), about 5 % of them breaking one of its
 * rules; the same N always gives the same lines. (A file argument, not `>`: `npm run` prints its
 * own header lines on stdout.)
 */
import { writeOrderEvents } from "./orders.js";

const [countArg = "10000", file = "events.ndjson"] = process.argv.slice(2);
const count = Number(countArg);
if (!Number.isInteger(count) || count < 0) {
  process.stderr.write(`usage: npm run example:events -- [N] [FILE]   (N a whole number, got "${countArg}")\n`);
  process.exit(2);
}
await writeOrderEvents(file, count);
process.stderr.write(`wrote ${count.toLocaleString("en")} order events to ${file}\n`);
