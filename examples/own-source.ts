/**
 * Writing your own source (docs/writing-a-source.md): a cursor source over an append-only log of
 * JSON lines, with its options declared once, registered so that JSON configs (a contract's
 * `source:` block, `createSource`) can name it, and run twice into a lake: the second run goes on
 * from the committed cursor. Run it: `npx tsx examples/own-source.ts [DIR]`.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadContract } from "../src/contract/index.js";
import { readQuarantine, readTable } from "../src/lake/index.js";
import { StreamSink } from "../src/sink/index.js";
import { createSource, registerSource, type ComponentSpec, type OptionsOf, type SourceFactory } from "../src/sources/connectors.js";
import type { Cursor, CursorSource, ReadOptions, SourceRecord } from "../src/index.js";

// 1. The options, declared once: validation, typed options and the reference docs come from it.
const eventLogSpec = {
  type: "event-log",
  kind: "cursor",
  summary: "JSON lines of an append-only log; cursor: the number of lines read",
  options: {
    lines: { type: "string[]", required: true, description: "the log's lines, oldest first" },
    name: { type: "string", default: "log", description: "a name for messages" },
  },
} as const satisfies ComponentSpec;

type EventLogOptions = OptionsOf<typeof eventLogSpec>;

// 2. The source: seek to a cursor, read what follows, say where it is.
class EventLogSource implements CursorSource {
  readonly kind = "cursor";
  readonly description: string;
  // A seek gives back every line after the cursor, in order, every time, to this stream only.
  readonly replays = true;
  private next = 0;
  private end: number | undefined;

  constructor(private readonly options: EventLogOptions) {
    this.description = `event-log ${options.name}`;
  }

  async seek(cursor: Cursor | undefined): Promise<void> {
    this.next = typeof cursor === "number" ? cursor : 0;
  }

  /** Exactly the lines handed over so far: never one read ahead but not yet yielded. */
  currentCursor(): Cursor {
    return this.next;
  }

  /** available_now stops at the log's length when the run starts (lines added later wait). */
  async endCursor(snapshot?: Cursor): Promise<Cursor> {
    this.end = typeof snapshot === "number" ? snapshot : this.options.lines.length;
    return this.end;
  }

  progress(cursor: Cursor, end: Cursor): number | undefined {
    return typeof cursor === "number" && typeof end === "number" && end > 0 ? cursor / end : undefined;
  }

  async *read(options: ReadOptions): AsyncIterable<SourceRecord> {
    const stop = options.mode === "available_now" ? (this.end ?? this.options.lines.length) : this.options.lines.length;
    while (this.next < stop && !options.signal.aborted) {
      const line = this.options.lines[this.next]!;
      const position = this.next;
      this.next += 1;
      try {
        yield { value: JSON.parse(line), raw: line, position };
      } catch (err) {
        // Not JSON: the sink quarantines it with its raw payload and this reason.
        yield { value: undefined, raw: line, position, decodeError: (err as Error).message };
      }
    }
  }
}

// 3. Registered by its type, a JSON config can name it.
const eventLogFactory: SourceFactory<typeof eventLogSpec> = { spec: eventLogSpec, create: (options) => new EventLogSource(options) };
registerSource(eventLogFactory);

const dir = process.argv[2] ?? mkdtempSync(join(tmpdir(), "lakelogic-own-source-"));
const contract = await loadContract(fileURLToPath(new URL("./orders.yaml", import.meta.url)));
const order = (id: number, amount: number) =>
  JSON.stringify({ order_id: id, customer_id: `c-${id}`, amount, currency: "EUR", status: "placed", email: `u${id}@example.com`, quantity: 1, created_at: "2026-01-01T00:00:00Z" });
const lines = [order(1, 10), order(2, -5), "{not json", order(3, 7.5)];

async function drain(log: string[]): Promise<void> {
  const source = await createSource({ type: "event-log", lines: log, name: "orders" });
  const sink = new StreamSink(contract, source, { targetPath: join(dir, "lake"), checkpoint: join(dir, "checkpoints.sqlite") });
  const summary = await sink.run("available_now");
  console.log(`read ${summary.sourceCount}: ${summary.goodCount} good, ${summary.badCount} quarantined; cursor ${String(summary.cursor)}`);
}

await drain(lines);
// The log grows; the next run reads only what was appended.
await drain([...lines, order(4, 3), order(1, 12)]);
const rows = await readTable(contract, { targetPath: join(dir, "lake") });
const quarantine = await readQuarantine(contract, { targetPath: join(dir, "lake") });
console.log(`table: ${rows.length} rows; quarantine: ${quarantine.length} rows (${quarantine.flatMap((q) => q.ruleIds).join(", ")})`);
