/**
 * SQL text helpers for every statement the project builds (DuckDB, Polars SQLContext,
 * PostgreSQL): one spelling of identifier and string quoting.
 */

/** Quote an identifier: `a"b` → `"a""b"`. */
export const quoteIdent = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/** Quote a string literal: `it's` → `'it''s'`. */
export const quoteString = (s: string): string => `'${s.replaceAll("'", "''")}'`;
