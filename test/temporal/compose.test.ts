import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { SEARCH_ATTRIBUTES } from "../../src/temporal/search-attributes.js";

/**
 * docker-compose.yml cannot run here (no Docker engine), so this keeps it honest in the ways
 * that can drift: it parses, wires schema setup before the server, and creates exactly the
 * search attributes the workflow publishes.
 */
const text = readFileSync(fileURLToPath(new URL("../../docker-compose.yml", import.meta.url)), "utf8");
const compose = parse(text) as { services: Record<string, { image: string; depends_on?: Record<string, { condition: string }> }> };

describe("docker-compose.yml", () => {
  it("runs PostgreSQL, schema setup, the server, namespace/search-attribute setup and the UI", () => {
    expect(Object.keys(compose.services).sort()).toEqual(["kafka", "postgresql", "temporal", "temporal-schema", "temporal-setup", "temporal-ui"]);
    // The broker starts only when asked for (`--profile kafka`): `docker compose up -d` is Temporal.
    expect((compose.services.kafka as { profiles?: string[] }).profiles).toEqual(["kafka"]);
    expect(compose.services.temporal!.image).toMatch(/^temporalio\/server:/);
    expect(Object.values(compose.services).map((s) => s.image).join(" ")).not.toMatch(/auto-setup/);
    expect(compose.services.temporal!.depends_on?.["temporal-schema"]?.condition).toBe("service_completed_successfully");
  });

  it("creates every search attribute the stream workflow publishes", () => {
    for (const name of Object.keys(SEARCH_ATTRIBUTES)) expect(text).toContain(name);
  });
});
