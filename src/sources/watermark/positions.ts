/* Value helpers of WatermarkChunkSource: identity, order and display of keyset positions. */

export type WatermarkValue = number | bigint | string | Date;

/**
 * A row's place in keyset order, and the cursor of a WatermarkChunkSource: the position of the
 * last record handed out. `tieBreaker` is present exactly when the source has a `tieBreakerField`.
 */
export interface WatermarkPosition {
  watermark: WatermarkValue;
  tieBreaker?: WatermarkValue;
}

export function isWatermarkValue(value: unknown): value is WatermarkValue {
  switch (typeof value) {
    case "number":
      return Number.isFinite(value);
    case "bigint":
    case "string":
      return true;
    case "object":
      return value instanceof Date && !Number.isNaN(value.getTime());
    default:
      return false;
  }
}

export function copy(p: WatermarkPosition): WatermarkPosition {
  const clone = (v: WatermarkValue): WatermarkValue => (v instanceof Date ? new Date(v.getTime()) : v);
  return p.tieBreaker === undefined
    ? { watermark: clone(p.watermark) }
    : { watermark: clone(p.watermark), tieBreaker: clone(p.tieBreaker) };
}

/** Identity of a value within one tie group (type-tagged so 1 and "1" differ). */
export function valueKey(v: WatermarkValue | undefined): string {
  if (v === undefined) return "u";
  if (v instanceof Date) return `d${v.getTime()}`;
  return `${(typeof v)[0]}${String(v)}`;
}

export function sameValue(a: WatermarkValue | undefined, b: WatermarkValue | undefined): boolean {
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  return a === b;
}

export function samePosition(a: WatermarkPosition, b: WatermarkPosition): boolean {
  return sameValue(a.watermark, b.watermark) && sameValue(a.tieBreaker, b.tieBreaker);
}

/** Order of two values of one numeric kind; undefined when JS cannot know the database's order. */
export function compareValues(a: WatermarkValue, b: WatermarkValue): number | undefined {
  if (a instanceof Date && b instanceof Date) return Math.sign(a.getTime() - b.getTime());
  const numeric = (v: WatermarkValue) => typeof v === "number" || typeof v === "bigint";
  if (numeric(a) && numeric(b)) return a < b ? -1 : a > b ? 1 : 0;
  return undefined;
}

export function comparePositions(a: WatermarkPosition, b: WatermarkPosition): number | undefined {
  const wm = sameValue(a.watermark, b.watermark) ? 0 : compareValues(a.watermark, b.watermark);
  if (wm !== 0 || a.tieBreaker === undefined || b.tieBreaker === undefined) return wm;
  return sameValue(a.tieBreaker, b.tieBreaker) ? 0 : compareValues(a.tieBreaker, b.tieBreaker);
}

export function show(p: WatermarkPosition): string {
  const v = (x: WatermarkValue) => (x instanceof Date ? x.toISOString() : typeof x === "bigint" ? `${x}n` : JSON.stringify(x));
  return p.tieBreaker === undefined ? `(${v(p.watermark)})` : `(${v(p.watermark)}, ${v(p.tieBreaker)})`;
}

export function describeType(value: unknown): string {
  if (value === null) return "null";
  if (value instanceof Date) return "an invalid Date";
  if (Array.isArray(value)) return "an array";
  return typeof value;
}

export const aborted = Symbol("aborted");

/** Settle with the promise, or with `aborted` as soon as the signal fires (the promise is left to finish). */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | typeof aborted> {
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.resolve(aborted);
  }
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      promise.catch(() => undefined); // a late failure after abort is nobody's business
      resolve(aborted);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        if (signal.aborted) resolve(aborted);
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the wrapped promise's own reason, passed on unchanged
        else reject(error);
      },
    );
  });
}

