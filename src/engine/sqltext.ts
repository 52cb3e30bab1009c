/** SQL text helpers shared by the DuckDB statement builder and Polars SQLContext queries. */
export const quoteIdent = (name: string): string => `"${name.replaceAll('"', '""')}"`;
export const quoteString = (s: string): string => `'${s.replaceAll("'", "''")}'`;
