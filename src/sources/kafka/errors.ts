import { LakeLogicError } from "../../errors.js";

/** A stored cursor does not belong to this topic, or cannot be right for it. */
export class KafkaCursorError extends LakeLogicError {
  constructor(code: "CURSOR_MISMATCH" | "CURSOR_BEYOND_END", message: string) {
    super(code, message);
  }
}

/** The kafkajs consumer stopped for good (it gave up, or was refused). */
export class KafkaConsumerError extends LakeLogicError {
  constructor(description: string, cause: unknown) {
    super("KAFKA_CONSUMER", `${description}: the consumer stopped: ${messageOf(cause)}`, { cause });
  }
}

/** An error's message, with its cause's when kafkajs wrapped a more telling one. */
export function messageOf(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error && cause.message && !err.message.includes(cause.message) ? `${err.message} (${cause.message})` : err.message;
  }
  return String(err);
}

/** Protocol error types along an error's cause chain (kafkajs wraps them in retry errors). */
export function errorTypes(err: unknown): string[] {
  const out: string[] = [];
  for (let e = err, depth = 0; e && typeof e === "object" && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const type = (e as { type?: unknown }).type;
    if (typeof type === "string") out.push(type);
  }
  return out;
}
