/**
 * A Server-Sent Events parser that follows the WHATWG HTML "event stream interpretation" rules:
 * lines end in CRLF, LF or CR (also when the CR and LF arrive in different chunks); a leading BOM
 * is dropped; `:` lines are comments; one space after the colon is removed; `data` lines are
 * joined with "\n"; an `id` containing NUL is ignored; `retry` is honoured only when it is all
 * ASCII digits; an event is dispatched on a blank line, never at end of stream.
 *
 * It works on bytes rather than on decoded text so that an event whose data is not valid UTF-8
 * can be reported with its exact bytes (and quarantined) instead of being silently mangled.
 * Line terminators are ASCII and never occur inside a multi-byte UTF-8 sequence, so splitting
 * bytes on them is safe.
 */
import { SSEProtocolError } from "../core/errors.js";

export interface SSEEvent {
  /** `event:` field, or "message". */
  type: string;
  /** `data:` lines joined with "\n" (invalid UTF-8 replaced by U+FFFD; see `invalidUtf8`). */
  data: string;
  /** The stream's last event id at dispatch: this event's `id:`, or inherited from an earlier one. */
  lastEventId: string;
  /** Whether this event carried its own `id:` field (only then does it name a new position). */
  hasId: boolean;
  /** Set when a `data` line was not valid UTF-8: the raw data bytes (lines joined with LF). */
  invalidUtf8?: Uint8Array;
}

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;

const strictDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const lenientDecoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

export class SSEParser {
  /** Bytes of an unfinished line carried over from earlier chunks. */
  private partial: Uint8Array[] = [];
  private partialBytes = 0;
  /** The previous chunk ended in CR: an LF at the start of the next one belongs to it. */
  private skipLF = false;
  private atStreamStart = true;

  private dataLines: Uint8Array[] = [];
  private dataBytes = 0;
  private eventType = "";
  private sawId = false;
  /** Set by `id:` lines as they are parsed… */
  private lastEventIdBuffer: string;
  /** …and copied here when a block is dispatched: only this one is used to reconnect (spec). */
  private lastEventIdString: string;

  /** The latest `retry:` value in ms, if the server sent one. */
  retryMs: number | undefined;

  constructor(
    lastEventId = "",
    /** A line longer than this is an error (I5): a server that never ends a line cannot fill memory. */
    private readonly maxLineBytes = 16 * 1024 * 1024,
  ) {
    this.lastEventIdBuffer = lastEventId;
    this.lastEventIdString = lastEventId;
  }

  /**
   * The id to send as `Last-Event-ID` on reconnect: that of the last dispatched block. An `id:`
   * inside an event cut off by a dropped connection does not count — that event was never seen.
   */
  get lastEventId(): string {
    return this.lastEventIdString;
  }

  /**
   * Start a new connection: an unfinished line or event from the previous one is discarded
   * (the spec never dispatches an event cut off by the end of the stream), the id is kept.
   */
  reset(): void {
    this.lastEventIdBuffer = this.lastEventIdString;
    this.partial = [];
    this.partialBytes = 0;
    this.skipLF = false;
    this.atStreamStart = true;
    this.clearEvent();
  }

  /** Feed a chunk; returns the events it completed, in order. */
  push(chunk: Uint8Array): SSEEvent[] {
    const events: SSEEvent[] = [];
    let start = 0;
    if (this.skipLF && chunk.length > 0) {
      if (chunk[0] === LF) start = 1;
      this.skipLF = false;
    }
    for (let i = start; i < chunk.length; i++) {
      const b = chunk[i];
      if (b !== LF && b !== CR) continue;
      this.line(this.joinPartial(chunk.subarray(start, i)), events);
      if (b === CR) {
        if (i + 1 < chunk.length) {
          if (chunk[i + 1] === LF) i++;
        } else {
          this.skipLF = true;
        }
      }
      start = i + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.slice(start);
      this.partialBytes += rest.length;
      if (this.partialBytes > this.maxLineBytes) {
        throw new SSEProtocolError(`a line exceeded ${this.maxLineBytes} bytes without a line break`);
      }
      this.partial.push(rest);
    }
    return events;
  }

  private joinPartial(tail: Uint8Array): Uint8Array {
    if (this.partial.length === 0) return tail;
    const out = new Uint8Array(this.partialBytes + tail.length);
    let o = 0;
    for (const p of this.partial) {
      out.set(p, o);
      o += p.length;
    }
    out.set(tail, o);
    this.partial = [];
    this.partialBytes = 0;
    return out;
  }

  private line(bytes: Uint8Array, events: SSEEvent[]): void {
    let line = bytes;
    if (this.atStreamStart) {
      this.atStreamStart = false;
      // U+FEFF as UTF-8: only at the very start of the stream.
      if (line.length >= 3 && line[0] === 0xef && line[1] === 0xbb && line[2] === 0xbf) line = line.subarray(3);
    }
    if (line.length === 0) {
      this.dispatch(events);
      return;
    }
    if (line[0] === COLON) return; // comment / keep-alive
    const colon = line.indexOf(COLON);
    let name: Uint8Array;
    let value: Uint8Array;
    if (colon === -1) {
      name = line;
      value = line.subarray(line.length);
    } else {
      name = line.subarray(0, colon);
      value = line.subarray(colon + 1);
      if (value[0] === SPACE) value = value.subarray(1);
    }
    switch (lenientDecoder.decode(name)) {
      case "event":
        this.eventType = lenientDecoder.decode(value);
        break;
      case "data":
        // Copied: `value` may be a view of the caller's chunk.
        this.dataLines.push(value.slice());
        this.dataBytes += value.length + 1;
        if (this.dataBytes > this.maxLineBytes) {
          throw new SSEProtocolError(`an event's data exceeded ${this.maxLineBytes} bytes`);
        }
        break;
      case "id":
        if (!value.includes(0)) {
          this.lastEventIdBuffer = lenientDecoder.decode(value);
          this.sawId = true;
        }
        break;
      case "retry":
        if (value.length > 0 && value.every((c) => c >= 0x30 && c <= 0x39)) {
          this.retryMs = Number(lenientDecoder.decode(value));
        }
        break;
      default:
        // Unknown fields are ignored by the spec.
        break;
    }
  }

  private dispatch(events: SSEEvent[]): void {
    this.lastEventIdString = this.lastEventIdBuffer;
    if (this.dataLines.length === 0) {
      // Nothing to deliver, but an `id:` seen here has already moved the last event id (spec).
      this.clearEvent();
      return;
    }
    const joined = new Uint8Array(this.dataBytes - 1);
    let o = 0;
    this.dataLines.forEach((d, i) => {
      if (i > 0) joined[o++] = LF;
      joined.set(d, o);
      o += d.length;
    });
    let data: string;
    let invalidUtf8: Uint8Array | undefined;
    try {
      data = strictDecoder.decode(joined);
    } catch {
      data = lenientDecoder.decode(joined);
      invalidUtf8 = joined;
    }
    const event: SSEEvent = {
      type: this.eventType === "" ? "message" : this.eventType,
      data,
      lastEventId: this.lastEventIdBuffer,
      hasId: this.sawId,
    };
    if (invalidUtf8) event.invalidUtf8 = invalidUtf8;
    events.push(event);
    this.clearEvent();
  }

  private clearEvent(): void {
    this.dataLines = [];
    this.dataBytes = 0;
    this.eventType = "";
    this.sawId = false;
  }
}
