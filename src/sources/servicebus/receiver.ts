/**
 * The parts of `@azure/service-bus` types the connector uses, described here (not imported) so
 * the package's type declarations compile without the optional SDK installed. The SDK's
 * `ServiceBusReceiver` and `ServiceBusReceivedMessage` are assignable to them.
 */

/** A received message, as the connector reads and settles it. */
export interface ServiceBusMessageLike {
  readonly body: unknown;
  readonly messageId?: string | number | Buffer;
  readonly lockToken?: string;
  readonly lockedUntilUtc?: Date;
  readonly enqueuedTimeUtc?: Date;
  /** A `Long` in the SDK. */
  readonly sequenceNumber?: { toString(): string };
  readonly deliveryCount?: number;
  readonly applicationProperties?: Readonly<Record<string, number | boolean | string | Date | null>>;
  readonly contentType?: string;
  readonly subject?: string;
  readonly correlationId?: string | number | Buffer;
  readonly sessionId?: string;
}

/**
 * The part of `ServiceBusReceiver` (peek-lock) the connector uses. Pass your own receiver —
 * made with any `ServiceBusClient` options, e.g. sessions or a proxy — as `receiver`.
 */
export interface ServiceBusReceiverLike {
  receiveMessages(maxMessageCount: number, options?: { maxWaitTimeInMs?: number; abortSignal?: AbortSignal }): Promise<ServiceBusMessageLike[]>;
  completeMessage(message: ServiceBusMessageLike): Promise<void>;
  abandonMessage(message: ServiceBusMessageLike): Promise<void>;
  deadLetterMessage(message: ServiceBusMessageLike, options?: { deadLetterReason: string; deadLetterErrorDescription: string }): Promise<void>;
  renewMessageLock(message: ServiceBusMessageLike): Promise<Date>;
  close(): Promise<void>;
}
