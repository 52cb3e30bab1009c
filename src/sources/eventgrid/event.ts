/**
 * The part of an `@azure/eventgrid-namespaces` `ReceiveDetails` the connector keeps until it
 * settles the event, described here (not imported) so the package's type declarations compile
 * without the optional SDK installed. The SDK's `ReceiveDetails` is assignable to it.
 */
export interface EventGridDetailLike {
  readonly brokerProperties: { readonly lockToken: string; readonly deliveryCount: number };
  readonly event: { readonly id: string; readonly source: string; readonly type: string; readonly time?: Date };
}
