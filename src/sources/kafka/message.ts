/**
 * The part of a kafkajs `KafkaMessage` the source reads, described here (not imported) so the
 * package's type declarations compile without the optional kafkajs installed. kafkajs's own
 * message type is assignable to it.
 */
export interface KafkaMessage {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  /** Milliseconds since the epoch, as a string. */
  readonly timestamp: string;
  readonly offset: string;
  readonly headers?: Readonly<Record<string, Buffer | string | Array<Buffer | string> | undefined>>;
}
