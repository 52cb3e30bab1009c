/* Value helpers of WatermarkChunkSource: identity, order and display of keyset positions. */
import {
  comparePositions as compareFieldPositions,
  copyPosition,
  isFieldValue,
  samePosition,
  sameValue,
  showPosition,
  valueKey,
  type FieldPosition,
  type FieldValue,
} from "../core/field-cursor.js";

/*
 * The order is the one of every field cursor (core/field-cursor.ts) with strings left to the
 * database: its ORDER BY sorts text by its collation, which JS cannot reproduce, so two strings
 * are only ever equal or not. Numbers, bigints and Dates order fully.
 */
export type WatermarkValue = FieldValue;

/**
 * A row's place in keyset order, and the cursor of a WatermarkChunkSource: the position of the
 * last record handed out. `tieBreaker` is present exactly when the source has a `tieBreakerField`.
 */
export type WatermarkPosition = FieldPosition;

export function isWatermarkValue(value: unknown): value is WatermarkValue {
  return isFieldValue(value, "collation");
}

export const copy = copyPosition;
export const show = showPosition;
export { samePosition, sameValue, valueKey };

/** Order of two positions; undefined when JS cannot know the database's order (two different strings). */
export function comparePositions(a: WatermarkPosition, b: WatermarkPosition): number | undefined {
  return compareFieldPositions(a, b, "collation");
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

