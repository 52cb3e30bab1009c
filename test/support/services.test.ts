import { existsSync } from "node:fs";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { startPostgres } from "./postgres.js";
import { ServiceUnavailableError, requireService, servicesRequired } from "./services.js";

const failing = async (): Promise<never> => {
  throw new Error("no broker binary; run scripts/provision-example.sh");
};

describe("requireService", () => {
  it("outside CI: skips with a line naming the suite and the reason", async () => {
    const lines: string[] = [];
    const svc = await requireService("example suite", failing, { env: {}, log: (l) => lines.push(l) });
    expect(svc).toBeUndefined();
    expect(lines).toEqual(["[skip] example suite: no broker binary; run scripts/provision-example.sh"]);
  });

  it("in CI: throws, so the suite fails instead of skipping", async () => {
    const lines: string[] = [];
    for (const env of [{ CI: "true" }, { CI: "1" }, { LAKELOGIC_REQUIRE_SERVICES: "1" }]) {
      await expect(requireService("example suite", failing, { env, log: (l) => lines.push(l) })).rejects.toThrow(
        ServiceUnavailableError,
      );
    }
    expect(lines).toEqual([]);
    expect(servicesRequired({ CI: "false" })).toBe(false);
  });

  it("returns the started service either way", async () => {
    const svc = { stop: async () => undefined };
    expect(await requireService("s", async () => svc, { env: { CI: "true" } })).toBe(svc);
    expect(await requireService("s", async () => svc, { env: {} })).toBe(svc);
  });
});

const server = await requireService("support/postgres helper", () => startPostgres());
afterAll(() => server?.stop());

describe.skipIf(!server)("startPostgres", () => {
  it("serves on 127.0.0.1 with trust auth, and stop() shuts it down and removes its directory", async () => {
    const s = await startPostgres();
    expect(s.url).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
    const c = new pg.Client(s.url);
    await c.connect();
    const { rows } = await c.query<{ addr: string; port: number }>(
      "SELECT inet_server_addr()::text AS addr, inet_server_port() AS port",
    );
    expect(rows[0]).toEqual({ addr: "127.0.0.1/32", port: s.port });
    await c.end();
    expect(existsSync(s.socketDir)).toBe(true);
    await s.stop();
    await s.stop(); // idempotent
    expect(existsSync(s.socketDir)).toBe(false);
    const late = new pg.Client({ connectionString: s.url, connectionTimeoutMillis: 2_000 });
    await expect(late.connect()).rejects.toThrow();
  });

  it("two servers run side by side on different ports", async () => {
    const other = await startPostgres();
    try {
      expect(other.port).not.toBe(server!.port);
    } finally {
      await other.stop();
    }
  });
});
