import { afterAll, beforeAll } from "vitest";
import { setEnv } from "./env.js";
import { s3Environment, startS3, type ObjectStoreServer } from "./objectstores.js";

/**
 * For the enclosing describe block: an S3 server holding `bucket`, with its credentials in this
 * process's environment (the default chain that the Delta helper and DuckDB's httpfs read) while
 * the block's tests run; stopped, and the environment restored, after them. The returned function
 * gives the running server inside tests and later hooks.
 */
export function s3ForSuite(bucket: string): () => ObjectStoreServer {
  let s3: ObjectStoreServer | undefined;
  let restoreEnv = (): void => undefined;
  beforeAll(async () => {
    s3 = await startS3();
    await s3.createBucket(bucket);
    restoreEnv = setEnv(s3Environment(s3.endpoint));
  }, 120_000);
  afterAll(async () => {
    restoreEnv();
    await s3?.stop();
  });
  return () => {
    if (!s3) throw new Error("s3ForSuite: the server is reached only inside the suite's tests and hooks");
    return s3;
  };
}
