import { describe, expect, it } from "vitest";
import { ReplayWindow, type ReplayKey } from "../../src/sources/sse/replay-window.js";

const ev = (lastEventId: string, data: string, extra: Partial<ReplayKey> = {}): ReplayKey => ({
  lastEventId,
  sinceId: 0,
  type: "message",
  data,
  ...extra,
});

describe("SSE replay window", () => {
  it("skips an exact copy; the same position with another type, data or place after the id is new", () => {
    const w = new ReplayWindow(10);
    expect(w.seen(ev("1", "a"))).toBe(false);
    expect(w.seen(ev("1", "a"))).toBe(true);
    expect(w.seen(ev("1", "a", { type: "ping" }))).toBe(false);
    expect(w.seen(ev("1", "a", { sinceId: 1 }))).toBe(false);
    expect(w.seen(ev("2", "a"))).toBe(false);
    expect(w.length).toBe(4);
  });

  it("lets an id reused for new data through, and then knows both", () => {
    const w = new ReplayWindow(10);
    expect(w.seen(ev("7", "first"))).toBe(false);
    expect(w.seen(ev("7", "second"))).toBe(false);
    expect(w.seen(ev("7", "first"))).toBe(true);
    expect(w.seen(ev("7", "second"))).toBe(true);
  });

  it("remembers at most its size, the most recent events; a forgotten one counts as new", () => {
    const w = new ReplayWindow(3);
    for (let i = 1; i <= 5; i++) expect(w.seen(ev(String(i), `d${i}`))).toBe(false);
    expect(w.length).toBe(3);
    // 3, 4 and 5 are remembered; 1 and 2 were forgotten.
    expect(w.seen(ev("5", "d5"))).toBe(true);
    expect(w.seen(ev("3", "d3"))).toBe(true);
    expect(w.seen(ev("1", "d1"))).toBe(false);
    expect(w.length).toBe(3);
    // Remembering 1 forgot 3, the oldest.
    expect(w.seen(ev("3", "d3"))).toBe(false);
  });

  it("forgets one of several events at a reused id without forgetting the others", () => {
    const w = new ReplayWindow(2);
    w.seen(ev("7", "first"));
    w.seen(ev("7", "second"));
    w.seen(ev("8", "x")); // forgets 7/first
    expect(w.seen(ev("7", "second"))).toBe(true);
    expect(w.seen(ev("7", "first"))).toBe(false);
  });

  it("compares data that is not UTF-8 by its bytes, never by its replaced text", () => {
    const w = new ReplayWindow(10);
    const lossy = "\uFFFD(";
    expect(w.seen(ev("1", lossy, { invalidUtf8: new Uint8Array([0xc3, 0x28]) }))).toBe(false);
    expect(w.seen(ev("1", lossy, { invalidUtf8: new Uint8Array([0xc3, 0x28]) }))).toBe(true);
    // Other bytes with the same replaced text, and valid text equal to it, are new.
    expect(w.seen(ev("1", lossy, { invalidUtf8: new Uint8Array([0xe2, 0x28]) }))).toBe(false);
    expect(w.seen(ev("1", lossy))).toBe(false);
  });

  it("compares long payloads exactly too", () => {
    const w = new ReplayWindow(10);
    const long = "x".repeat(100_000);
    const other = `${"x".repeat(99_999)}y`;
    expect(w.seen(ev("1", long))).toBe(false);
    expect(w.seen(ev("1", other))).toBe(false);
    expect(w.seen(ev("1", long))).toBe(true);
    expect(w.seen(ev("1", other))).toBe(true);
    const bytes = new Uint8Array(5000).fill(0xff);
    const otherBytes = new Uint8Array(5000).fill(0xff);
    otherBytes[4999] = 0xfe;
    expect(w.seen(ev("1", "\uFFFD", { invalidUtf8: bytes }))).toBe(false);
    expect(w.seen(ev("1", "\uFFFD", { invalidUtf8: otherBytes }))).toBe(false);
    expect(w.seen(ev("1", "\uFFFD", { invalidUtf8: bytes.slice() }))).toBe(true);
    // Text whose length is that of the bytes is still text.
    expect(w.seen(ev("1", "\u00ff".repeat(5000)))).toBe(false);
  });

  it("of size 0 skips nothing; clear() forgets everything", () => {
    const none = new ReplayWindow(0);
    expect(none.seen(ev("1", "a"))).toBe(false);
    expect(none.seen(ev("1", "a"))).toBe(false);
    const w = new ReplayWindow(5);
    w.seen(ev("1", "a"));
    w.clear();
    expect(w.length).toBe(0);
    expect(w.seen(ev("1", "a"))).toBe(false);
    expect(w.seen(ev("1", "a"))).toBe(true);
  });
});
