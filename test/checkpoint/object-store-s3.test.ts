import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { loadContract } from "../../src/contract/index.js";
import { StreamSink } from "../../src/sink/index.js";
import { IterableSource } from "../../src/sources/index.js";
import { CheckpointStoreError } from "../../src/checkpoint/errors.js";
import { openCheckpointLocation } from "../../src/checkpoint/location.js";
import { objectPath } from "../../src/checkpoint/object-backend.js";
import { openS3Backend } from "../../src/checkpoint/s3.js";
import { startS3 } from "../support/objectstores.js";
import { freePort } from "../support/proc.js";
import { requireService } from "../support/services.js";
import { cloudSuite } from "./cloud-suite.js";
import { record } from "./conformance.js";

const s3 = await requireService("checkpoint/s3 (moto server)", () => startS3());
afterAll(() => s3?.stop());
const BUCKET = "lakelogic-checkpoints";

if (s3) {
  await s3.createBucket(BUCKET);
  // The AWS SDK's own configuration, as a deployment would set it: no LakeLogic option at all.
  process.env.AWS_ENDPOINT_URL = s3.endpoint;
  process.env.AWS_ACCESS_KEY_ID = "test";
  process.env.AWS_SECRET_ACCESS_KEY = "test";
  process.env.AWS_REGION = "us-east-1";
}

describe.skipIf(!s3)("S3 checkpoint location on moto", () => {
  cloudSuite({
    name: "s3:// (moto, endpoint from AWS_ENDPOINT_URL)",
    uri: (prefix, bucket = BUCKET) => `s3://${bucket}/${prefix}`,
    options: {},
    backend: async (uri) => {
      const [, bucket = "", prefix = ""] = /^s3:\/\/([^/]+)\/?(.*)$/.exec(uri) ?? [];
      return openS3Backend(bucket, prefix, uri);
    },
    endpoint: s3?.endpoint ?? "",
    through: (endpoint) => ({ s3: { endpoint } }),
  });

  it("takes the endpoint from an option as well, and writes <prefix>/<key>.json", async () => {
    const saved = process.env.AWS_ENDPOINT_URL;
    delete process.env.AWS_ENDPOINT_URL;
    try {
      const store = await openCheckpointLocation(`s3://${BUCKET}/by-option`, { s3: { endpoint: s3!.endpoint, region: "us-east-1" } });
      await store.commit(record(1, { offset: 1n }, "w", "stream::orders"));
      const raw = await openS3Backend(BUCKET, "", `s3://${BUCKET}`, { endpoint: s3!.endpoint, region: "us-east-1" });
      const got = await raw.read(objectPath("by-option", "stream::orders.json"));
      expect(JSON.parse(new TextDecoder().decode(got!.bytes))).toMatchObject({ key: "stream::orders", batchId: 1 });
      await raw.close();
      await store.close();
    } finally {
      process.env.AWS_ENDPOINT_URL = saved;
    }
  });

  it("calls an endpoint that does not answer retriable, naming the location", async () => {
    const port = await freePort(); // nothing listens there
    const store = await openCheckpointLocation(`s3://${BUCKET}/down`, { s3: { endpoint: `http://127.0.0.1:${port}`, region: "us-east-1" } });
    const err = await store.load("orders").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CheckpointStoreError);
    expect((err as CheckpointStoreError).code).toBe("CHECKPOINT_STORE_UNAVAILABLE");
    expect((err as CheckpointStoreError).retriable).toBe(true);
    expect((err as Error).message).toContain(`s3://${BUCKET}/down`);
    await store.close();
  });

  it("a Python LakeLogic checkpoint at the location: a run refuses to start over beside it; checkpoint import continues it", async () => {
    const raw = await openS3Backend(BUCKET, "", `s3://${BUCKET}`);
    // As the Python package writes it: <prefix>/<key, unsafe characters as _>.json
    const body = { cursor: { "orders:0": 41 }, batch_id: 6, committed_at: "2026-03-01T12:00:00+00:00", source_count: 10, good_count: 9, bad_count: 1 };
    await raw.write(objectPath("from-python", "stream__orders.json"), new TextEncoder().encode(JSON.stringify(body)), "absent");
    await raw.close();
    const location = `s3://${BUCKET}/from-python`;

    const contract = await loadContract(resolve("examples", "orders.yaml"));
    const sink = new StreamSink(contract, new IterableSource([]), { checkpoint: location, targetPath: mkdtempSync(join(tmpdir(), "ll-s3-py-")), handleSignals: false });
    await expect(sink.run("available_now")).rejects.toThrow(/batch 6\).*lakelogic checkpoint import CONTRACT --from s3:\/\/lakelogic-checkpoints\/from-python/);

    let out = "";
    const code = await main(["checkpoint", "import", "--from", location, "--checkpoint", location, "--key", "stream::orders", "--cursor", "kafka"], {
      stdout: (t) => void (out += t),
      stderr: (t) => void (out += t),
    });
    expect({ code, out }).toMatchObject({ code: 0, out: expect.stringMatching(/^imported stream::orders: batch 6/) });
    const store = await openCheckpointLocation(location);
    expect(await store.load("stream::orders")).toMatchObject({ batchId: 6, cursor: { "orders:0": 41 }, totals: { sourceCount: 10, goodCount: 9, badCount: 1 } });
    await store.close();
  });
});
