/**
 * DuckDB's Node API, as the rest of the project imports it. ES modules evaluate their imports in
 * the order written, so the memory profile's process settings apply before `@duckdb/node-api`
 * loads the native library (see process-settings.ts). Import DuckDB from here, never from the
 * package directly.
 */
import "./process-settings.js";
export * from "@duckdb/node-api";
