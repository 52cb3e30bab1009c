import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { orderEvent } from "../../examples/orders.js";
import { loadContract } from "../../src/contract/index.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { StreamSink } from "../../src/sink/index.js";
import { createSource } from "../../src/sources/registry.js";
import "../../src/sources/file/connector.js";
import { FileSource, type FileCursor } from "../../src/sources/file/source.js";
import type { BufferedRecordIterator, SourceRecord } from "../../src/sources/core/types.js";

const dir = mkdtempSync(join(tmpdir(), "ll-file-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const signal = new AbortController().signal;

async function drain(src: FileSource, mode: "available_now" | "continuous" = "available_now", s = signal) {
  const out: SourceRecord[] = [];
  for await (const r of src.read({ mode, signal: s })) out.push(r);
  return out;
}

describe("FileSource", () => {
  it("reads JSON lines, quarantines garbage lines, and resumes by byte offset", async () => {
    const path = join(dir, "a.ndjson");
    writeFileSync(path, '{"id":1}\n{"id":2}\nnot json\n\n{"id":3}\r\n{"id":"é"}\n');
    const src = new FileSource(path, { chunkBytes: 1024 });
    await src.seek(undefined);
    const all = await drain(src);
    expect(all.map((r) => r.value)).toEqual([{ id: 1 }, { id: 2 }, undefined, { id: 3 }, { id: "é" }]);
    expect(all[2]!.decodeError).toMatch(/line 3: invalid JSON/);
    expect(all[2]!.raw).toBe("not json");
    const size = Buffer.byteLength('{"id":1}\n{"id":2}\nnot json\n\n{"id":3}\r\n{"id":"é"}\n');
    expect(src.currentCursor()).toMatchObject({ offset: size, line: 6 });

    // Resume after the second line: exactly the rest.
    const again = new FileSource(path, { chunkBytes: 1024 });
    await again.seek({ offset: 18, line: 2 });
    expect((await drain(again)).map((r) => r.raw)).toEqual(["not json", '{"id":3}', '{"id":"é"}']);
  });

  it("keeps exact offsets across tiny read chunks", async () => {
    const path = join(dir, "b.ndjson");
    const lines = Array.from({ length: 500 }, (_, i) => JSON.stringify({ id: i, pad: "x".repeat(i % 37) }));
    writeFileSync(path, lines.join("\n") + "\n");
    const src = new FileSource(path, { chunkBytes: 7 });
    await src.seek(undefined);
    const got = await drain(src);
    expect(got.map((r) => (r.value as { id: number }).id)).toEqual(lines.map((_, i) => i));
  });

  it("keeps exact byte offsets when ASCII chunks, multi-byte characters and invalid bytes mix", async () => {
    const path = join(dir, "b2.ndjson");
    // Chunks of 64 bytes: some all ASCII (decoded once), some with "é", "🎉" or a stray 0xff byte.
    const parts: Buffer[] = [];
    for (let i = 0; i < 200; i++) {
      const text = i % 7 === 3 ? `{"id":${i},"s":"é🎉"}\n` : `{"id":${i},"s":"${"a".repeat(i % 23)}"}\n`;
      parts.push(i % 29 === 5 ? Buffer.concat([Buffer.from(`{"id":${i},"s":"`), Buffer.from([0xff]), Buffer.from('"}\n')]) : Buffer.from(text));
    }
    const bytes = Buffer.concat(parts);
    writeFileSync(path, bytes);
    const src = new FileSource(path, { chunkBytes: 64 });
    await src.seek(undefined);
    let offset = 0;
    const ids: number[] = [];
    for await (const r of src.read({ mode: "available_now", signal })) {
      const i = ids.length;
      offset += parts[i]!.length;
      if (i % 29 === 5) {
        // A stray byte is never replaced: the line is quarantined with its bytes as they are.
        expect(r.decodeError).toBe(`line ${i + 1}: not valid UTF-8`);
        expect(Buffer.from(r.raw as Uint8Array)).toEqual(parts[i]!.subarray(0, -1));
        ids.push(i);
      } else ids.push((r.value as { id: number }).id);
      // The cursor after each line is the byte offset of the next one, whatever the line held.
      expect(src.currentCursor()).toMatchObject({ offset, line: ids.length });
    }
    expect(ids).toEqual(parts.map((_, i) => i));
    // Resuming from a cursor in the middle of a non-ASCII stretch reads exactly the rest.
    const mid = parts.slice(0, 101).reduce((n, b) => n + b.length, 0);
    const again = new FileSource(path, { chunkBytes: 64 });
    await again.seek({ offset: mid, line: 101 });
    expect((await drain(again)).map((r, k) => (r.decodeError ? 101 + k : (r.value as { id: number }).id))).toEqual(parts.slice(101).map((_, i) => 101 + i));
  });

  it("available_now stops at the size captured at the start; later lines wait for the next run", async () => {
    const path = join(dir, "c.ndjson");
    writeFileSync(path, '{"id":1}\n{"id":2}\n');
    const src = new FileSource(path);
    await src.seek(undefined);
    await src.endCursor();
    appendFileSync(path, '{"id":3}\n');
    expect((await drain(src)).map((r) => r.value)).toEqual([{ id: 1 }, { id: 2 }]);
    const next = new FileSource(path);
    await next.seek(src.currentCursor());
    expect((await drain(next)).map((r) => r.value)).toEqual([{ id: 3 }]);
  });

  it("follows a growing file in continuous mode until aborted", async () => {
    const path = join(dir, "d.ndjson");
    writeFileSync(path, '{"id":1}\n');
    const src = new FileSource(path, { idleBackoffMs: { initial: 5, max: 20 } });
    await src.seek(undefined);
    const stop = new AbortController();
    const seen: unknown[] = [];
    const reading = (async () => {
      for await (const r of src.read({ mode: "continuous", signal: stop.signal })) {
        seen.push(r.value);
        if (seen.length === 1) appendFileSync(path, '{"id":2}\n');
        if (seen.length === 2) stop.abort();
      }
    })();
    await reading;
    expect(seen).toEqual([{ id: 1 }, { id: 2 }]);
  });

  it("hands out the lines of a chunk it has read without a promise each, with the cursor after each one", async () => {
    const path = join(dir, "g.ndjson");
    const lines = Array.from({ length: 300 }, (_, i) => JSON.stringify({ id: i, pad: "y".repeat(i % 11) }));
    writeFileSync(path, lines.join("\n") + "\n\n" + '{"id":"last"}\n');
    const reference = new FileSource(path, { chunkBytes: 256 });
    await reference.seek(undefined);
    const expected: Array<{ raw: unknown; cursor: unknown }> = [];
    for await (const r of reference.read({ mode: "available_now", signal })) expected.push({ raw: r.raw, cursor: reference.currentCursor() });

    const src = new FileSource(path, { chunkBytes: 256 });
    await src.seek(undefined);
    const it = src.read({ mode: "available_now", signal })[Symbol.asyncIterator]() as BufferedRecordIterator;
    expect(it.takeBuffered()).toBeUndefined(); // nothing read yet
    const got: Array<{ raw: unknown; cursor: unknown }> = [];
    let buffered = 0;
    while (true) {
      let r = it.takeBuffered();
      if (r) buffered++;
      else {
        const next = await it.next();
        if (next.done) break;
        r = next.value;
      }
      got.push({ raw: r.raw, cursor: src.currentCursor() });
    }
    expect(got).toEqual(expected);
    expect(got).toHaveLength(301);
    expect(buffered).toBeGreaterThan(250);
  });

  it("refuses a cursor beyond the end of a truncated file", async () => {
    const path = join(dir, "e.ndjson");
    writeFileSync(path, '{"id":1}\n');
    const src = new FileSource(path);
    await expect(src.seek({ offset: 1000, line: 50 })).rejects.toThrow(/truncated or replaced/);
  });

  it("is built from JSON config, with option errors naming the option", async () => {
    const path = join(dir, "f.ndjson");
    writeFileSync(path, "");
    expect(await createSource({ type: "file", path })).toBeInstanceOf(FileSource);
    await expect(createSource({ type: "file" })).rejects.toThrow(/source file: path: is required/);
    await expect(createSource({ type: "fiel", path })).rejects.toThrow(/did you mean "file"/);
  });
});

const ORDERS = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
/** An order event that passes every rule of the demo contract, as one JSON line without its newline. */
const orderLine = (i: number) => JSON.stringify(orderEvent(i, 0));

async function lake(targetPath: string) {
  const contract = await loadContract(ORDERS);
  const good = await readTable(contract, { targetPath });
  const bad = await readQuarantine(contract, { targetPath });
  return { good: good.map((r) => Number(r.order_id)).sort((a, b) => a - b), bad };
}

describe("FileSource and a line still being written", () => {
  it("continuous: half a line waits for the rest; the record lands once, whole, never quarantined", async () => {
    const path = join(dir, "half.ndjson");
    const target = mkdtempSync(join(dir, "lake-"));
    const second = orderLine(1);
    writeFileSync(path, `${orderLine(0)}\n${second.slice(0, 40)}`);
    const rest = `${second.slice(40)}\n${orderLine(2)}\n`;
    const total = Buffer.byteLength(`${orderLine(0)}\n${second}\n${orderLine(2)}\n`);
    const stop = new AbortController();
    let appended = false;
    const summary = await new StreamSink(ORDERS, new FileSource(path, { idleBackoffMs: { initial: 1, max: 5 } }), {
      targetPath: target,
      batchSize: 1,
      signal: stop.signal,
      onBatch: (b) => {
        // The writer finishes the line only after the reader has read (and held) its first half.
        if (!appended) appendFileSync(path, rest);
        appended = true;
        if ((b.cursor as FileCursor).offset >= total) stop.abort();
      },
    }).run("continuous");
    expect(summary).toMatchObject({ sourceCount: 3, goodCount: 3, badCount: 0, cursor: { offset: total, line: 3 } });
    const { good, bad } = await lake(target);
    expect(good).toEqual([0, 1, 2]);
    expect(bad).toEqual([]);
  });

  it("available_now stops before an unterminated last line, says so, and the next run takes it whole once its newline is there", async () => {
    const path = join(dir, "tail.ndjson");
    const target = mkdtempSync(join(dir, "lake-"));
    const complete = `${orderLine(0)}\n${orderLine(1)}\n`;
    const partial = orderLine(2);
    writeFileSync(path, complete + partial);
    const warnings: string[] = [];
    const source = () => new FileSource(path, { onWarning: (m) => warnings.push(m) });

    const first = await new StreamSink(ORDERS, source(), { targetPath: target }).run("available_now");
    const at = Buffer.byteLength(complete);
    expect(first).toMatchObject({ sourceCount: 2, goodCount: 2, badCount: 0, cursor: { offset: at, line: 2 }, lag: { bytes: partial.length } });
    expect(await lake(target)).toEqual({ good: [0, 1], bad: [] });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(new RegExp(`last ${partial.length} bytes .*from byte ${at}.* no newline`));

    // Nothing new until the newline arrives: the partial line is neither read nor committed.
    const idle = await new StreamSink(ORDERS, source(), { targetPath: target }).run("available_now");
    expect(idle).toMatchObject({ batches: 0, sourceCount: 0, resumedFrom: { offset: at, line: 2 } });

    appendFileSync(path, "\n");
    const second = await new StreamSink(ORDERS, source(), { targetPath: target }).run("available_now");
    expect(second).toMatchObject({ sourceCount: 1, goodCount: 1, badCount: 0, cursor: { offset: at + partial.length + 1, line: 3 } });
    expect(await lake(target)).toEqual({ good: [0, 1, 2], bad: [] });
    expect(warnings).toHaveLength(2); // the idle run's, none for the last
  });

  it("available_now without an end snapshot also leaves an unterminated last line unread", async () => {
    const path = join(dir, "tail2.ndjson");
    writeFileSync(path, '{"id":1}\n{"id":2}\n{"id":');
    const src = new FileSource(path);
    await src.seek(undefined);
    expect((await drain(src)).map((r) => r.value)).toEqual([{ id: 1 }, { id: 2 }]);
    expect(src.currentCursor()).toMatchObject({ offset: 18, line: 2 });
    expect(await src.lag()).toEqual({ bytes: 6 });
  });

  it("quarantines an unterminated tail longer than maxRecordBytes in pieces with their bytes and reason, and goes on", async () => {
    const path = join(dir, "garbage.ndjson");
    const target = mkdtempSync(join(dir, "lake-"));
    const garbage = Buffer.from(Array.from({ length: 1000 }, (_, i) => 0x21 + ((i * 7) % 90)));
    writeFileSync(path, Buffer.concat([Buffer.from(`${orderLine(0)}\n`), garbage]));
    const tail = `\n${orderLine(1)}\n`;
    const total = Buffer.byteLength(`${orderLine(0)}\n`) + garbage.length + Buffer.byteLength(tail);
    const stop = new AbortController();
    let appended = false;
    const summary = await new StreamSink(ORDERS, new FileSource(path, { maxRecordBytes: 300, idleBackoffMs: { initial: 1, max: 5 } }), {
      targetPath: target,
      batchSize: 1,
      signal: stop.signal,
      onBatch: (b) => {
        const offset = (b.cursor as FileCursor).offset;
        // Three pieces of 300 bytes are quarantined before the line ends; then its newline comes.
        if (!appended && offset >= Buffer.byteLength(`${orderLine(0)}\n`) + 900) {
          appendFileSync(path, tail);
          appended = true;
        }
        if (offset >= total) stop.abort();
      },
    }).run("continuous");
    expect(summary).toMatchObject({ sourceCount: 6, goodCount: 2, badCount: 4 });
    const { good, bad } = await lake(target);
    expect(good).toEqual([0, 1]);
    expect(bad.map((r) => r.reasons[0])).toEqual([
      expect.stringMatching(/line 2: longer than maxRecordBytes \(300\)/),
      expect.stringMatching(/line 2: longer than maxRecordBytes \(300\)/),
      expect.stringMatching(/line 2: longer than maxRecordBytes \(300\)/),
      expect.stringMatching(/line 2: longer than maxRecordBytes \(300\)/),
    ]);
    // Nothing lost: the pieces, in order, are the garbage byte for byte.
    const pieces = [...bad].sort((a, b) => (a.position as FileCursor).offset - (b.position as FileCursor).offset);
    expect(pieces.every((r) => r.rawEncoding === "base64")).toBe(true);
    expect(Buffer.concat(pieces.map((r) => Buffer.from(r.raw!, "base64")))).toEqual(garbage);
  });

  it("quarantines a complete line longer than maxRecordBytes in pieces, and resumes in the middle of one", async () => {
    const path = join(dir, "long.ndjson");
    const long = "x".repeat(250);
    writeFileSync(path, `{"id":1}\n${long}\n{"id":2}\n`);
    const src = new FileSource(path, { maxRecordBytes: 100 });
    await src.seek(undefined);
    const got = await drain(src);
    expect(got.map((r) => (r.decodeError ? `bad:${(r.raw as Uint8Array).length}` : r.value))).toEqual([{ id: 1 }, "bad:100", "bad:100", "bad:50", { id: 2 }]);
    expect(got[1]!.decodeError).toMatch(/line 2: longer than maxRecordBytes \(100\)/);
    expect(src.currentCursor()).toMatchObject({ offset: 9 + 251 + 9, line: 3 });

    // A run that stopped after the first piece resumes inside the line: the rest is quarantined, never parsed.
    const first = new FileSource(path, { maxRecordBytes: 100 });
    await first.seek(undefined);
    const it = first.read({ mode: "available_now", signal })[Symbol.asyncIterator]();
    await it.next();
    await it.next();
    const inside = first.currentCursor();
    await it.return!();
    expect(inside).toMatchObject({ offset: 109, line: 1, inLine: true });
    const again = new FileSource(path, { maxRecordBytes: 100 });
    await again.seek(inside);
    const rest = await drain(again);
    expect(rest.map((r) => (r.decodeError ? `bad:${(r.raw as Uint8Array).length}` : r.value))).toEqual(["bad:100", "bad:50", { id: 2 }]);
  });

  it("available_now quarantines the full pieces of an over-long unterminated tail and leaves the rest", async () => {
    const path = join(dir, "long-tail.ndjson");
    writeFileSync(path, `{"id":1}\n${"z".repeat(250)}`);
    const warnings: string[] = [];
    const src = new FileSource(path, { maxRecordBytes: 100, onWarning: (m) => warnings.push(m) });
    await src.seek(undefined);
    expect(await src.endCursor()).toMatchObject({ offset: 259, line: -1 });
    const got = await drain(src);
    expect(got.map((r) => (r.decodeError ? `bad:${(r.raw as Uint8Array).length}` : r.value))).toEqual([{ id: 1 }, "bad:100", "bad:100"]);
    expect(got[2]!.decodeError).toMatch(/line 2: longer than maxRecordBytes \(100\).*bytes 109\.\.209 of the file/);
    expect(src.currentCursor()).toEqual(expect.objectContaining({ offset: 209, line: 1, inLine: true }));
    expect(await src.lag()).toEqual({ bytes: 50 });
    expect(warnings).toEqual([]);
  });

  it("takes maxRecordBytes from the JSON config", async () => {
    const path = join(dir, "cfg.ndjson");
    writeFileSync(path, "");
    await expect(createSource({ type: "file", path, maxRecordBytes: 0 })).rejects.toThrow(/maxRecordBytes/);
    expect(await createSource({ type: "file", path, maxRecordBytes: 1024 })).toBeInstanceOf(FileSource);
  });
});
