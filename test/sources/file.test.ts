import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createSource } from "../../src/sources/registry.js";
import "../../src/sources/file/factory.js";
import { FileSource } from "../../src/sources/file/file-source.js";
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
    writeFileSync(path, '{"id":1}\n{"id":2}\nnot json\n\n{"id":3}\r\n{"id":"é"}');
    const src = new FileSource(path, { chunkBytes: 1024 });
    await src.seek(undefined);
    const all = await drain(src);
    expect(all.map((r) => r.value)).toEqual([{ id: 1 }, { id: 2 }, undefined, { id: 3 }, { id: "é" }]);
    expect(all[2]!.decodeError).toMatch(/line 3: invalid JSON/);
    expect(all[2]!.raw).toBe("not json");
    const size = Buffer.byteLength('{"id":1}\n{"id":2}\nnot json\n\n{"id":3}\r\n{"id":"é"}');
    expect(src.currentCursor()).toEqual({ offset: size, line: 6 });

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
      offset += parts[ids.length]!.length;
      ids.push((r.value as { id: number }).id);
      // The cursor after each line is the byte offset of the next one, whatever the line held.
      expect(src.currentCursor()).toEqual({ offset, line: ids.length });
    }
    expect(ids).toEqual(parts.map((_, i) => i));
    // Resuming from a cursor in the middle of a non-ASCII stretch reads exactly the rest.
    const mid = parts.slice(0, 101).reduce((n, b) => n + b.length, 0);
    const again = new FileSource(path, { chunkBytes: 64 });
    await again.seek({ offset: mid, line: 101 });
    expect((await drain(again)).map((r) => (r.value as { id: number }).id)).toEqual(parts.slice(101).map((_, i) => 101 + i));
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
    writeFileSync(path, lines.join("\n") + "\n\n" + '{"id":"last"}');
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
