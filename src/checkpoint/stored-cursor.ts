import { decodeCursor } from "./codec.js";
import { CheckpointCursorError } from "./errors.js";
import type { Cursor } from "./types.js";

/** Longest part of a stored cursor quoted in an error: enough to find a hand edit. */
const EXCERPT = 80;

/**
 * Decode a cursor read back from a store. A row that is not typed JSON (hand-edited, damaged)
 * becomes a CheckpointCursorError naming the key and the store, not a bare JSON or codec error.
 */
export function decodeStoredCursor(text: string, key: string, location: string): Cursor {
  try {
    return decodeCursor(text);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    const excerpt = text.length > EXCERPT ? `${text.slice(0, EXCERPT)}…` : text;
    throw new CheckpointCursorError(key, location, `${reason}; stored text: ${excerpt}`, { cause: err });
  }
}
