/**
 * What the PostgreSQL helpers need of a client: `query(text, values)`. A `pg` Client, Pool or
 * PoolClient fits; `pg` itself is not a dependency of LakeLogic.
 */
export interface SqlQueryable {
  query(text: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
}
