import { describe, expect, it } from "vitest";
import { SSEProtocolError } from "../../src/sources/core/errors.js";
import { SSEParser, type SSEEvent } from "../../src/sources/sse/parser.js";

const enc = new TextEncoder();

function parseAll(input: string | Uint8Array, chunking: "whole" | "bytes" = "whole", lastEventId = ""): SSEEvent[] {
  const bytes = typeof input === "string" ? enc.encode(input) : input;
  const p = new SSEParser(lastEventId);
  if (chunking === "whole") return p.push(bytes);
  const out: SSEEvent[] = [];
  for (let i = 0; i < bytes.length; i++) out.push(...p.push(bytes.subarray(i, i + 1)));
  return out;
}

/** Every case must give the same events however the bytes are split into chunks. */
function both(input: string | Uint8Array, lastEventId = ""): SSEEvent[] {
  const whole = parseAll(input, "whole", lastEventId);
  expect(parseAll(input, "bytes", lastEventId)).toEqual(whole);
  return whole;
}

const ev = (data: string, extra: Partial<SSEEvent> = {}): SSEEvent => ({ type: "message", data, lastEventId: "", hasId: false, ...extra });

describe("SSEParser (WHATWG event stream rules)", () => {
  it("dispatches on a blank line and joins data lines with \\n", () => {
    expect(both("data: a\ndata: b\n\ndata:c\n\n")).toEqual([ev("a\nb"), ev("c")]);
  });

  it("accepts CRLF, LF and CR line endings, also a CRLF split across chunks", () => {
    expect(both("data: a\r\n\r\ndata: b\r\rdata: c\n\n")).toEqual([ev("a"), ev("b"), ev("c")]);
    const p = new SSEParser();
    expect(p.push(enc.encode("data: x\r"))).toEqual([]);
    // The LF completes the CR above: one line ending, not an empty line.
    expect(p.push(enc.encode("\ndata: y\n\n"))).toEqual([ev("x\ny")]);
  });

  it("strips a leading BOM only at the start of the stream", () => {
    expect(both("\uFEFFdata: a\n\n")).toEqual([ev("a")]);
    // A BOM later is part of the field name, which is then unknown and ignored.
    expect(both("data: a\n\n\uFEFFdata: b\n\n")).toEqual([ev("a")]);
  });

  it("skips comments and keep-alives; ignores unknown fields", () => {
    expect(both(": keep-alive\n\n:\n\nfoo: bar\ndata: x\n: mid-event comment\n\n")).toEqual([ev("x")]);
  });

  it("removes exactly one space after the colon; a line without a colon is a field with an empty value", () => {
    expect(both("data:  two spaces\n\n")).toEqual([ev(" two spaces")]);
    expect(both("data\n\n")).toEqual([ev("")]);
    expect(both("data\ndata\n\n")).toEqual([ev("\n")]);
  });

  it("sets the event type, defaulting to message", () => {
    expect(both("event: tick\ndata: 1\n\ndata: 2\n\n")).toEqual([ev("1", { type: "tick" }), ev("2")]);
  });

  it("keeps the last event id across events; only events with their own id: have hasId", () => {
    expect(both("id: 1\ndata: a\n\ndata: b\n\nid: 2\ndata: c\n\n")).toEqual([
      ev("a", { lastEventId: "1", hasId: true }),
      ev("b", { lastEventId: "1", hasId: false }),
      ev("c", { lastEventId: "2", hasId: true }),
    ]);
  });

  it("ignores an id containing NUL; an empty id resets it", () => {
    expect(both("id: 7\ndata: a\n\nid: x\u0000y\ndata: b\n\nid\ndata: c\n\n")).toEqual([
      ev("a", { lastEventId: "7", hasId: true }),
      ev("b", { lastEventId: "7", hasId: false }),
      ev("c", { lastEventId: "", hasId: true }),
    ]);
  });

  it("moves the id on a block without data but dispatches nothing", () => {
    const p = new SSEParser();
    expect(p.push(enc.encode("id: 42\n\n"))).toEqual([]);
    expect(p.lastEventId).toBe("42");
  });

  it("starts from the id it was given", () => {
    expect(both("data: a\n\n", "9")).toEqual([ev("a", { lastEventId: "9" })]);
  });

  it("honours retry only when it is all ASCII digits", () => {
    const p = new SSEParser();
    p.push(enc.encode("retry: 2500\n\n"));
    expect(p.retryMs).toBe(2500);
    for (const bad of ["retry: 10a\n", "retry: -1\n", "retry: 1.5\n", "retry:\n", "retry:  100\n"]) {
      p.push(enc.encode(bad));
      expect(p.retryMs).toBe(2500);
    }
  });

  it("never dispatches an event cut off by the end of the stream; reset() drops it", () => {
    const p = new SSEParser();
    expect(p.push(enc.encode("id: 1\ndata: whole\n\nid: 2\ndata: half"))).toEqual([ev("whole", { lastEventId: "1", hasId: true })]);
    // The cut-off event's id was parsed but never dispatched: reconnecting must not skip it.
    expect(p.lastEventId).toBe("1");
    p.reset();
    expect(p.lastEventId).toBe("1");
    expect(p.push(enc.encode("data: next\n\n"))).toEqual([ev("next", { lastEventId: "1" })]);
  });

  it("decodes UTF-8 split across chunks", () => {
    expect(both("data: héllo ☃ 😀\n\n")).toEqual([ev("héllo ☃ 😀")]);
  });

  it("reports data that is not valid UTF-8 with its exact bytes", () => {
    const bytes = new Uint8Array([...enc.encode("data: a"), 0xff, 0xfe, ...enc.encode("\ndata: b\n\n")]);
    const [e] = both(bytes);
    expect(e?.data).toBe("a\uFFFD\uFFFD\nb");
    expect([...(e?.invalidUtf8 ?? [])]).toEqual([0x61, 0xff, 0xfe, 0x0a, 0x62]);
  });

  it("refuses a line that never ends (bounded memory)", () => {
    const p = new SSEParser("", 1024);
    expect(() => {
      for (let i = 0; i < 10; i++) p.push(enc.encode("x".repeat(200)));
    }).toThrow(SSEProtocolError);
    const q = new SSEParser("", 1024);
    expect(() => q.push(enc.encode(`${"data: yyyyyyyyyy\n".repeat(100)}\n`))).toThrow(/data exceeded 1024 bytes/);
  });
});
