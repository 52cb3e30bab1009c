import { LakeLogicError, NonRetriableError } from "../../errors.js";
import { errorText, safeCause } from "../../util/redact.js";
import type { KafkaSasl } from "./spec.js";

/** The brokers cannot be reached, or the group's consumer cannot start; worth retrying. */
export class KafkaConnectError extends LakeLogicError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("KAFKA_CONNECT", message, options);
  }
}

/** The topic's offsets cannot be read (it does not exist, or this client may not describe it). */
export class KafkaTopicError extends NonRetriableError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("KAFKA_TOPIC", message, options);
  }
}

/** The kafkajs consumer stopped for good (it gave up, or was refused). */
export class KafkaConsumerError extends LakeLogicError {
  constructor(description: string, cause: unknown, sasl?: KafkaSasl) {
    super("KAFKA_CONSUMER", `${description}: the consumer stopped: ${messageOf(cause, sasl)}`, { cause: causeOf(cause, sasl) });
  }
}

/**
 * An error's message, with its cause's when kafkajs wrapped a more telling one; without the SASL
 * secrets or any credential in a URL.
 */
export function messageOf(err: unknown, sasl: KafkaSasl | undefined): string {
  return errorText(err, saslSecrets(sasl));
}

/** `err` as the cause of an error of ours, or undefined when it would show a secret. */
export function causeOf(err: unknown, sasl: KafkaSasl | undefined): unknown {
  return safeCause(err, saslSecrets(sasl));
}

/** The values of SASL credentials that must never be shown. */
export function saslSecrets(sasl: KafkaSasl | undefined): string[] {
  if (!sasl) return [];
  if (sasl.mechanism === "aws") return [sasl.secretAccessKey, ...(sasl.sessionToken ? [sasl.sessionToken] : [])];
  if (sasl.mechanism === "oauthbearer") return [];
  return [sasl.password];
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
