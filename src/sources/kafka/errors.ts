import { LakeLogicError } from "../../errors.js";

/** The brokers cannot be reached, or the group's consumer cannot start; worth retrying. */
export class KafkaConnectError extends LakeLogicError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("KAFKA_CONNECT", message, { ...options, retriable: true });
  }
}

/** The topic's offsets cannot be read (it does not exist, or this client may not describe it). */
export class KafkaTopicError extends LakeLogicError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("KAFKA_TOPIC", message, { ...options, retriable: false });
  }
}

/** The kafkajs consumer stopped for good (it gave up, or was refused). */
export class KafkaConsumerError extends LakeLogicError {
  constructor(description: string, cause: unknown) {
    super("KAFKA_CONSUMER", `${description}: the consumer stopped: ${messageOf(cause)}`, { cause, retriable: true });
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
