import { afterAll, describe, expect, it } from "vitest";
import { openGcsBackend } from "../../src/checkpoint/gcs.js";
import { openCheckpointLocation } from "../../src/checkpoint/location.js";
import { startGcs } from "../support/objectstores.js";
import { requireService } from "../support/services.js";
import { cloudSuite } from "./cloud-suite.js";
import { record } from "./conformance.js";

const gcs = await requireService("checkpoint/gcs (fake-gcs-server)", () => startGcs());
afterAll(() => gcs?.stop());
const BUCKET = "lakelogic-checkpoints";
if (gcs) await gcs.createBucket(BUCKET);

describe.skipIf(!gcs)("GCS checkpoint location on fake-gcs-server", () => {
  cloudSuite({
    name: "gs:// (fake-gcs-server, apiEndpoint option)",
    uri: (prefix, bucket = BUCKET) => `gs://${bucket}/${prefix}`,
    options: { gcs: { apiEndpoint: gcs?.endpoint ?? "" } },
    backend: async (uri) => {
      const [, bucket = "", prefix = ""] = /^gs:\/\/([^/]+)\/?(.*)$/.exec(uri) ?? [];
      return openGcsBackend(bucket, prefix, uri, { apiEndpoint: gcs!.endpoint });
    },
    endpoint: gcs?.endpoint ?? "",
    through: (apiEndpoint) => ({ gcs: { apiEndpoint } }),
  });

  it("takes the emulator from STORAGE_EMULATOR_HOST, in the host:port form Google's other clients accept", async () => {
    process.env.STORAGE_EMULATOR_HOST = gcs!.endpoint.replace(/^http:\/\//, "");
    try {
      const a = await openCheckpointLocation(`gs://${BUCKET}/by-env`);
      expect(await a.commit(record(1, { at: new Date("2026-01-01T00:00:00Z") }))).toBe("committed");
      const b = await openCheckpointLocation(`gs://${BUCKET}/by-env`);
      expect((await b.load("orders"))?.cursor).toEqual({ at: new Date("2026-01-01T00:00:00Z") });
      await a.close();
      await b.close();
    } finally {
      delete process.env.STORAGE_EMULATOR_HOST;
    }
  });
});
