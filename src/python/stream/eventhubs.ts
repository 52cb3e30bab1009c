/**
 * Azure Event Hubs through its Kafka endpoint: everything comes from the connection string, which
 * is a secret, so no message here ever shows it — only the names of its parts.
 */
import { ConfigError } from "../../errors.js";

/** What a connection string says about where and how to connect. */
export interface EventHubsEndpoint {
  /** The namespace host, e.g. `my-ns.servicebus.windows.net`. */
  host: string;
  /** The event hub, when the string is an event hub's (not the namespace's). */
  entityPath?: string;
  /** `UseDevelopmentEmulator=true`: the local emulator, which serves Kafka without TLS on 9092. */
  emulator: boolean;
}

/** Event Hubs' Kafka endpoint listens here (TLS); the emulator on 9092 (no TLS). */
export const EVENTHUBS_KAFKA_PORT = 9093;
export const EMULATOR_KAFKA_PORT = 9092;

const OPTION = "source stream: connection_string";

/** The parts of `Endpoint=sb://<host>/;SharedAccessKeyName=…;SharedAccessKey=…[;EntityPath=…]`. */
export function parseEventHubsConnectionString(text: string): EventHubsEndpoint {
  const parts = new Map<string, string>();
  for (const part of text.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0) parts.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  const endpoint = parts.get("endpoint");
  if (!endpoint) {
    throw new ConfigError(OPTION, "has no `Endpoint=sb://<namespace>.servicebus.windows.net/` part; copy the namespace's connection string from the Azure portal (Shared access policies)");
  }
  let host: string;
  try {
    const url = new URL(endpoint);
    host = url.hostname;
    if (url.protocol !== "sb:" || host === "") throw new Error("not sb://");
  } catch {
    throw new ConfigError(OPTION, "has an `Endpoint` that is not `sb://<namespace>.servicebus.windows.net/`");
  }
  const entityPath = parts.get("entitypath");
  return {
    host,
    ...(entityPath ? { entityPath } : {}),
    emulator: (parts.get("usedevelopmentemulator") ?? "").toLowerCase() === "true",
  };
}

/** The Kafka bootstrap address a connection string names: `<host>:9093` (the emulator: 9092). */
export function eventHubsBrokers(endpoint: EventHubsEndpoint): string[] {
  return [`${endpoint.host}:${endpoint.emulator ? EMULATOR_KAFKA_PORT : EVENTHUBS_KAFKA_PORT}`];
}
