/**
 * The real servers the walk-through uses when they are provisioned (`npm run provision`):
 * PostgreSQL, a Kafka broker and a Temporal dev server, each started on loopback for the walk
 * and stopped at its end. Without them the walk runs its in-process steps and says which steps it
 * left out and why; with `CI=true` (or LAKELOGIC_REQUIRE_SERVICES=1) a missing server is an error.
 * `LAKELOGIC_E2E_SERVERS=none` runs the in-process steps only, as on a machine with nothing provisioned.
 */
import { startKafka, type KafkaBroker } from "../../test/support/kafka.js";
import { startPostgres, type PostgresServer } from "../../test/support/postgres.js";
import { servicesRequired } from "../../test/support/services.js";
import { startTemporal, type TemporalServer } from "../../test/support/temporal.js";

export interface Servers {
  postgres?: PostgresServer;
  kafka?: KafkaBroker;
  temporal?: TemporalServer;
  /** Why a server is absent, by name. */
  missing: Map<string, string>;
  stop(): Promise<void>;
}

async function optional<T>(name: string, start: () => Promise<T>, missing: Map<string, string>): Promise<T | undefined> {
  try {
    return await start();
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    if (servicesRequired()) throw new Error(`${name} is required here (CI): ${why}`, { cause: err });
    missing.set(name, why.split("\n")[0]!);
    return undefined;
  }
}

export async function startServers(): Promise<Servers> {
  const missing = new Map<string, string>();
  if (process.env.LAKELOGIC_E2E_SERVERS === "none") {
    for (const name of ["PostgreSQL", "Kafka", "Temporal"]) missing.set(name, "LAKELOGIC_E2E_SERVERS=none");
    return { missing, stop: async () => {} };
  }
  // One at a time: three JVM/Go servers starting at once on two cores only slows each down.
  const postgres = await optional("PostgreSQL", () => startPostgres(), missing);
  const kafka = await optional("Kafka", () => startKafka(), missing);
  const temporal = kafka ? await optional("Temporal", () => startTemporal(), missing) : undefined;
  if (!kafka) missing.set("Temporal", "used only for the Kafka step");
  return {
    ...(postgres ? { postgres } : {}),
    ...(kafka ? { kafka } : {}),
    ...(temporal ? { temporal } : {}),
    missing,
    stop: async () => {
      await Promise.allSettled([temporal?.stop(), kafka?.stop(), postgres?.stop()]);
    },
  };
}
