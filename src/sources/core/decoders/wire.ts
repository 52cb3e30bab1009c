/**
 * The Confluent Schema Registry wire format: byte 0 is the magic byte 0, bytes 1–4 the schema id
 * (big-endian), then the serialized value. Protobuf values start with the message indexes that
 * pick the message type inside the schema: a zigzag varint count, then that many zigzag varints
 * (a path through nested messages); the single byte 0 is the common case, the first message.
 */
export interface WireFrame {
  schemaId: number;
  /** The value after the 5-byte header (for protobuf, still with its message indexes). */
  body: Uint8Array;
}

const HEADER = 5;

/** The frame of one payload, or why it is not in the wire format. */
export function readFrame(payload: Uint8Array, what: string): WireFrame | { error: string } {
  if (payload.byteLength < HEADER) {
    return { error: `${what} is not in the schema registry wire format: ${payload.byteLength} bytes, fewer than the 5-byte header` };
  }
  if (payload[0] !== 0) {
    return { error: `${what} is not in the schema registry wire format: magic byte is ${payload[0]}, expected 0` };
  }
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  return { schemaId: view.getInt32(1, false), body: payload.subarray(HEADER) };
}

/** The schema id of a payload in the wire format, or undefined when it is not one. */
export function schemaIdOf(payload: Uint8Array): number | undefined {
  if (payload.byteLength < HEADER || payload[0] !== 0) return undefined;
  return new DataView(payload.buffer, payload.byteOffset, payload.byteLength).getInt32(1, false);
}

/** The protobuf message indexes at the start of `body` and where the message starts. */
export function readMessageIndexes(body: Uint8Array, what: string): { indexes: number[]; offset: number } | { error: string } {
  let at = 0;
  const next = (): number | undefined => {
    let result = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (at >= body.byteLength) return undefined;
      const b = body[at++]!;
      result |= (b & 0x7f) << shift;
      if ((b & 0x80) === 0) return (result >>> 1) ^ -(result & 1); // zigzag
    }
    return undefined;
  };
  const count = next();
  if (count === undefined || count < 0 || count > 100) {
    return { error: `${what} has no valid protobuf message indexes after the schema id` };
  }
  if (count === 0) return { indexes: [0], offset: at };
  const indexes: number[] = [];
  for (let i = 0; i < count; i++) {
    const index = next();
    if (index === undefined || index < 0) return { error: `${what} has no valid protobuf message indexes after the schema id` };
    indexes.push(index);
  }
  return { indexes, offset: at };
}
