import { parseJsonRecord } from "../../util/exact-json.js";
import type { SourceRecord } from "./types.js";

/**
 * A record whose payload is JSON text, decoded only when someone reads `value` or `decodeError`
 * (then exactly as `parseJsonRecord` decodes it). The pipeline hands the text of such records to
 * an engine that parses JSON itself (Engine.validate's `json`), so most of them are never decoded
 * in JavaScript. A class, not a closure per record: the decoding is on the prototype.
 */
export class JsonTextRecord implements SourceRecord {
  private decoded = false;
  private decodedValue: unknown;
  private error: string | undefined;

  constructor(
    readonly json: string,
    readonly position: { line: number; offset: number; file?: string },
    readonly bytes: number,
  ) {}

  get raw(): string {
    return this.json;
  }

  get value(): unknown {
    if (!this.decoded) this.decode();
    return this.decodedValue;
  }

  get decodeError(): string | undefined {
    if (!this.decoded) this.decode();
    return this.error;
  }

  /** The record as a plain object (what logs, spreads and serialisers see). */
  toJSON(): SourceRecord {
    const { value, decodeError } = this;
    return { value, raw: this.json, position: this.position, bytes: this.bytes, ...(decodeError !== undefined ? { decodeError } : {}) };
  }

  private decode(): void {
    this.decoded = true;
    try {
      this.decodedValue = parseJsonRecord(this.json);
    } catch (err) {
      this.error = `line ${this.position.line}: invalid JSON: ${(err as Error).message}`;
    }
  }
}
