import type { SourceFactory } from "../core/registry.js";
import { LakeTableSource } from "./source.js";
import { duckdbLakeSpec, lakeSpec } from "./spec.js";

/** `{ "type": "lake", "path": "lake/bronze", "table": "bronze_orders" }`. */
export const lakeSourceFactory: SourceFactory<typeof lakeSpec> = {
  spec: lakeSpec,
  create: (o) => new LakeTableSource(o),
};

/** `{ "type": "duckdb", "path": "lake/bronze", "table": "bronze_orders" }`: the lake source on a duckdb lake. */
export const duckdbLakeSourceFactory: SourceFactory<typeof duckdbLakeSpec> = {
  spec: duckdbLakeSpec,
  create: (o) => new LakeTableSource({ ...o, format: "duckdb" }),
};
