import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: files that start servers or child processes must not starve each other.
    maxWorkers: 2,
    pool: "forks",
  },
});
