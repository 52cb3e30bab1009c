/**
 * The part of a `@google-cloud/pubsub` `Message` the connector keeps until it settles it,
 * described here (not imported) so the package's type declarations compile without the optional
 * SDK installed. The SDK's `Message` is assignable to it.
 */
export interface PubSubMessageLike {
  readonly id: string;
  readonly ackId: string;
  readonly data: Buffer;
  readonly publishTime: Date;
  readonly attributes: Readonly<Record<string, string>>;
  readonly orderingKey?: string;
  readonly deliveryAttempt?: number;
  ackWithResponse(): Promise<unknown>;
  nack(): void;
}
