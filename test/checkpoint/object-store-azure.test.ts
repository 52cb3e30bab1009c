import { afterAll, describe, expect, it } from "vitest";
import { openAzureBackend } from "../../src/checkpoint/azure-blob.js";
import { openCheckpointLocation } from "../../src/checkpoint/location.js";
import { parseLocation } from "../../src/checkpoint/object-uri.js";
import { AZURITE_ACCOUNT, startAzurite } from "../support/objectstores.js";
import { requireService } from "../support/services.js";
import { cloudSuite } from "./cloud-suite.js";
import { record } from "./conformance.js";

const azurite = await requireService("checkpoint/azure-blob (Azurite)", () => startAzurite());
afterAll(() => azurite?.stop());
const CONTAINER = "checkpoints";
if (azurite) await azurite.createBucket(CONTAINER);

/** The location as a user writes it; the connection string routes it to Azurite. */
const abfss = (prefix: string, container = CONTAINER) => `abfss://${container}@${AZURITE_ACCOUNT}.dfs.core.windows.net/${prefix}`;

describe.skipIf(!azurite)("Azure Blob checkpoint location on Azurite", () => {
  cloudSuite({
    name: "abfss:// (Azurite, connection string option)",
    uri: abfss,
    options: { azure: { connectionString: azurite?.connectionString ?? "" } },
    backend: async (uri) => {
      const parsed = parseLocation(uri);
      if (parsed.kind !== "object" || parsed.location.cloud !== "azure") throw new Error(uri);
      return openAzureBackend(parsed.location, { connectionString: azurite!.connectionString });
    },
    endpoint: azurite?.endpoint ?? "",
    through: (endpoint) => ({
      azure: { connectionString: (azurite?.connectionString ?? "").replace(/BlobEndpoint=[^;]+/, `BlobEndpoint=${endpoint}/${AZURITE_ACCOUNT}`) },
    }),
  });

  it("takes the connection string from AZURE_STORAGE_CONNECTION_STRING, and reads the same blob through every URL form", async () => {
    process.env.AZURE_STORAGE_CONNECTION_STRING = azurite!.connectionString;
    try {
      const written = await openCheckpointLocation(abfss("forms"));
      await written.commit(record(1, { offset: 7n }));
      for (const form of [
        `wasbs://${CONTAINER}@${AZURITE_ACCOUNT}.blob.core.windows.net/forms`,
        `https://${AZURITE_ACCOUNT}.blob.core.windows.net/${CONTAINER}/forms`,
        `az://${CONTAINER}/forms`,
      ]) {
        const store = await openCheckpointLocation(form);
        expect((await store.load("orders"))?.cursor, form).toEqual({ offset: 7n });
        await store.close();
      }
      await written.close();
    } finally {
      delete process.env.AZURE_STORAGE_CONNECTION_STRING;
    }
  });
});
