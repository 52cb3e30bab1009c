import { describe, expect, it } from "vitest";
import { IterableSource, NotReplayableError, toSource } from "../../src/sources/index.js";

const signal = new AbortController().signal;

async function drain(src: IterableSource): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const r of src.read({ mode: "available_now", signal })) out.push(r.value);
  return out;
}

describe("IterableSource", () => {
  it("tracks offset and exhaustion", async () => {
    const src = new IterableSource([1, 2, 3]);
    await src.seek(undefined);
    expect(await drain(src)).toEqual([1, 2, 3]);
    expect(src.currentCursor()).toEqual({ offset: 3, exhausted: true });
  });

  it("resumes a replayable iterable by skipping committed items", async () => {
    const src = new IterableSource(() => [1, 2, 3, 4, 5], { replayable: true });
    await src.seek({ offset: 2, exhausted: false });
    expect(await drain(src)).toEqual([3, 4, 5]);
    expect(src.currentCursor()).toEqual({ offset: 5, exhausted: true });
  });

  it("refuses to resume a non-replayable iterable after a partial run, with an explanation", async () => {
    const src = new IterableSource([1, 2, 3]);
    const err = await src.seek({ offset: 2, exhausted: false }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotReplayableError);
    expect((err as Error).message).toMatch(/replayable: true/);
  });

  it("starts a non-replayable iterable fresh after a run that read everything", async () => {
    const src = new IterableSource(["new-1", "new-2"]);
    await src.seek({ offset: 3, exhausted: true });
    expect(await drain(src)).toEqual(["new-1", "new-2"]);
    expect(src.currentCursor()).toEqual({ offset: 5, exhausted: true });
  });

  it("detects a 'replayable' iterable that is shorter than what was committed", async () => {
    const src = new IterableSource([1, 2], { replayable: true });
    await src.seek({ offset: 5, exhausted: false });
    await expect(drain(src)).rejects.toThrow(/not replaying the same items/);
  });

  it("rejects a cursor written by another kind of source", async () => {
    const src = new IterableSource([1], { replayable: true });
    await expect(src.seek({ "orders:0": 5 })).rejects.toThrow(/another kind of source/);
  });

  it("reads async generators too", async () => {
    async function* gen() {
      yield { id: 1 };
      yield { id: 2 };
    }
    const src = new IterableSource(gen());
    await src.seek(undefined);
    expect(await drain(src)).toEqual([{ id: 1 }, { id: 2 }]);
  });
});

describe("toSource", () => {
  it("wraps arrays, generators and connectors; passes sources through", async () => {
    expect(toSource([1])).toBeInstanceOf(IterableSource);
    expect(toSource({ stream: async function* () {} })).toBeInstanceOf(IterableSource);
    const cursorSource = new IterableSource([1]);
    expect(toSource(cursorSource)).toBe(cursorSource);
  });

  it("names what it expected for junk", () => {
    expect(() => toSource(42 as never)).toThrow(/source: expected a source/);
    expect(() => toSource({ foo: 1 } as never)).toThrow(/expected a cursor source/);
  });
});
