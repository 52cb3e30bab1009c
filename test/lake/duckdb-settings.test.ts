/**
 * The environment variables that tune a lake's DuckDB instance: applied when the process opens
 * the file, and a value DuckDB refuses is reported by its variable's name (DuckDB itself only
 * says "Failed to set config").
 */
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import { DUCKDB_FILE } from "../../src/lake/config.js";
import { acquireDatabase } from "../../src/lake/duckdb-db.js";
import { openLake } from "../../src/lake/index.js";
import { makeContract, tempDir } from "./helpers.js";

const dir = tempDir("duckdb-settings");
afterAll(() => dir.cleanup());

const VARS = ["LAKELOGIC_DUCKDB_MEMORY_LIMIT", "LAKELOGIC_DUCKDB_CHECKPOINT_THRESHOLD", "LAKELOGIC_DUCKDB_THREADS", "LAKELOGIC_MEMORY_PROFILE"];
const saved = Object.fromEntries(VARS.map((v) => [v, process.env[v]]));
afterEach(() => {
  for (const v of VARS) {
    if (saved[v] === undefined) delete process.env[v];
    else process.env[v] = saved[v];
  }
});

/** A new database file: DuckDB instances are kept per file, so each test gets its own. */
const freshPath = (): string => join(dir.path, `lake-${Math.random().toString(36).slice(2)}`);

async function settingsOf(targetPath: string): Promise<Record<string, string>> {
  const lake = await openLake(makeContract(), { targetPath });
  try {
    const db = await acquireDatabase(join(targetPath, DUCKDB_FILE));
    try {
      const conn = await db.connect();
      const reader = await conn.runAndReadAll(
        "SELECT current_setting('memory_limit'), current_setting('checkpoint_threshold'), current_setting('threads')",
      );
      const [memory, checkpoint, threads] = reader.getRowsJS()[0]!.map(String);
      return { memory: memory!, checkpoint: checkpoint!, threads: threads! };
    } finally {
      db.release();
    }
  } finally {
    await lake.close();
  }
}

describe("DuckDB settings from the environment", () => {
  it("applies the defaults, and the variables when set", async () => {
    for (const v of VARS) delete process.env[v];
    const defaults = await settingsOf(freshPath());
    expect(defaults.memory).toBe("122.0 MiB"); // 128MB
    expect(defaults.checkpoint).toBe("61.0 MiB"); // 64MB
    expect(defaults.threads).toBe("1");

    process.env["LAKELOGIC_DUCKDB_MEMORY_LIMIT"] = "96MiB";
    process.env["LAKELOGIC_DUCKDB_CHECKPOINT_THRESHOLD"] = "16MiB";
    process.env["LAKELOGIC_DUCKDB_THREADS"] = "2";
    expect(await settingsOf(freshPath())).toEqual({ memory: "96.0 MiB", checkpoint: "16.0 MiB", threads: "2" });
  });

  it("takes a variable that is set but empty as unset (the default applies)", async () => {
    for (const v of VARS) process.env[v] = "";
    const settings = await settingsOf(freshPath());
    expect(settings.memory).toBe("122.0 MiB"); // 128MB
    expect(settings.checkpoint).toBe("61.0 MiB"); // 64MB
  });

  it("takes its defaults from the lean memory profile, explicit variables still winning", async () => {
    for (const v of VARS) delete process.env[v];
    process.env["LAKELOGIC_MEMORY_PROFILE"] = "lean";
    const lean = await settingsOf(freshPath());
    expect(lean.memory).toBe("61.0 MiB"); // 64MB
    expect(lean.checkpoint).toBe("15.2 MiB"); // 16MB
    expect(lean.threads).toBe("1");

    process.env["LAKELOGIC_DUCKDB_MEMORY_LIMIT"] = "96MiB";
    expect((await settingsOf(freshPath())).memory).toBe("96.0 MiB");
  });

  for (const [variable, value, expected] of [
    ["LAKELOGIC_MEMORY_PROFILE", "small", /expected one of default, lean/],
    ["LAKELOGIC_DUCKDB_MEMORY_LIMIT", "plenty", /expected a size such as 64MB or 1GB/],
    ["LAKELOGIC_DUCKDB_CHECKPOINT_THRESHOLD", "sixteen", /expected a size such as 16MB/],
    ["LAKELOGIC_DUCKDB_THREADS", "0", /expected a whole number of threads, at least 1/],
  ] as const) {
    it(`names ${variable} when DuckDB refuses its value`, async () => {
      process.env[variable] = value;
      const err = await openLake(makeContract(), { targetPath: freshPath() }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).option).toBe(variable);
      expect((err as ConfigError).message).toContain(JSON.stringify(value));
      expect((err as ConfigError).message).toMatch(expected);
    });
  }
});
