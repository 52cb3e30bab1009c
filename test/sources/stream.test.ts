import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseContract } from "../../src/contract/index.js";
import { ConfigError } from "../../src/errors.js";
import { parseOptions } from "../../src/sources/core/spec.js";
import { resolveOptions } from "../../src/sources/kafka/options.js";
import { createSource, sourceSpecs } from "../../src/sources/registry.js";
import { kafkaSettings, streamRunSettings, streamSourceKind, streamSpec } from "../../src/python/stream/index.js";
import { mergeStreamOptions } from "../../src/python/stream/options.js";

const CONN = "Endpoint=sb://my-ns.servicebus.windows.net/;SharedAccessKeyName=listen;SharedAccessKey=c2VjcmV0PT0=";
const ENV = { KAFKA_BROKERS: "b1:9092,b2:9092", KAFKA_PASSWORD: "pa55-word", EH_CONN: CONN };

/** The `kafka` source options a `type: stream` JSON config becomes, with `env` for references. */
function settings(config: Record<string, unknown>, env: Record<string, string> = ENV) {
  return kafkaSettings(mergeStreamOptions(parseOptions(streamSpec, config, env, { origin: "config" }), env));
}

async function failure(p: Promise<unknown> | (() => unknown)): Promise<ConfigError> {
  try {
    await (typeof p === "function" ? p() : p);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

describe("type: stream — the Python form", () => {
  it("is a registered source type", () => {
    expect(sourceSpecs().map((s) => s.type)).toContain("stream");
  });

  it("kind kafka with SASL PLAIN: brokers from env:, the password resolved, TLS off for SASL_PLAINTEXT", () => {
    const s = settings({
      type: "stream",
      path: "rides",
      options: {
        kind: "kafka",
        brokers: "env:KAFKA_BROKERS",
        starting_offsets: "latest",
        security_protocol: "SASL_PLAINTEXT",
        sasl_mechanism: "PLAIN",
        sasl_username: "alice",
        sasl_password: "env:KAFKA_PASSWORD",
        group_id: "g1",
        checkpoint: "ck.sqlite",
        batch_size: 100,
        trigger: "available_now",
        processing_time: "30 seconds",
        max_offsets_per_trigger: 50,
      },
    });
    expect(s).toEqual({
      topic: "rides",
      options: {
        brokers: ["b1:9092", "b2:9092"],
        groupId: "g1",
        autoOffsetReset: "latest",
        sasl: { mechanism: "plain", username: "alice", password: "pa55-word" },
      },
    });
  });

  it("accepts the camelCase twins and the flat form", () => {
    const s = settings({ type: "stream", kind: "kafka", brokers: ["h:1"], topic: "t", securityProtocol: "SASL_SSL", saslMechanism: "SCRAM-SHA-512", saslUsername: "u", saslPassword: "env:KAFKA_PASSWORD" });
    expect(s.options).toMatchObject({ ssl: true, sasl: { mechanism: "scram-sha-512", username: "u", password: "pa55-word" } });
    expect(settings({ type: "stream", options: { kind: "kafka", brokers: "h:1", topic: "t", security_protocol: "SSL" } }).options.ssl).toBe(true);
    expect(settings({ type: "stream", options: { kind: "kafka", brokers: "h:1", topic: "t" } }).options).toEqual({ brokers: ["h:1"] });
  });

  it("kind eventhubs derives brokers, SASL_SSL, PLAIN and $ConnectionString from the connection string", () => {
    const s = settings({ type: "stream", path: "rides", options: { kind: "eventhubs", connection_string: "env:EH_CONN" } });
    expect(s).toEqual({
      topic: "rides",
      options: { brokers: ["my-ns.servicebus.windows.net:9093"], ssl: true, sasl: { mechanism: "plain", username: "$ConnectionString", password: CONN } },
    });
    // An event hub's own connection string names the topic; `brokers` overrides the address.
    const hub = settings(
      { type: "stream", options: { kind: "eventhubs", connection_string: "env:EH_CONN", brokers: "127.0.0.1:19093" } },
      { EH_CONN: `${CONN};EntityPath=orders` },
    );
    expect(hub.topic).toBe("orders");
    expect(hub.options.brokers).toEqual(["127.0.0.1:19093"]);
    // The Event Hubs emulator serves Kafka without TLS on 9092.
    const emulator = settings(
      { type: "stream", path: "t", options: { kind: "eventhubs", connection_string: "env:EH_CONN" } },
      { EH_CONN: "Endpoint=sb://localhost;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;" },
    );
    expect(emulator.options.brokers).toEqual(["localhost:9092"]);
    expect(emulator.options.ssl).toBeUndefined();
    expect(emulator.options.sasl).toMatchObject({ mechanism: "plain", username: "$ConnectionString" });
  });

  it("refuses secrets written as literals, without echoing them", async () => {
    const literal = await failure(createSource({ type: "stream", path: "t", options: { kind: "eventhubs", connection_string: CONN } }));
    expect(literal.message).toMatch(/options.connection_string: .*env:STREAM_OPTIONS_CONNECTION_STRING/);
    expect(literal.message).not.toContain("c2VjcmV0");
    const password = await failure(
      createSource({ type: "stream", path: "t", options: { kind: "kafka", brokers: "h:1", security_protocol: "SASL_SSL", sasl_username: "u", sasl_password: "hunter2" } }),
    );
    expect(password.message).toMatch(/options.sasl_password: .*env:/);
    expect(password.message).not.toContain("hunter2");
    const flat = await failure(createSource({ type: "stream", kind: "kafka", brokers: "h:1", topic: "t", sasl_password: "hunter2" }));
    expect(flat.message).not.toContain("hunter2");
  });

  it("refuses contradictions and missing pieces, naming the option", () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ kind: "kafka", topic: "t" }, /brokers: is required/],
      [{ kind: "kafka", brokers: "h:1" }, /topic: is required/],
      [{ brokers: "h:1", topic: "t" }, /kind: is required/],
      [{ kind: "files", brokers: "h:1", topic: "t" }, /kind: expected one of kafka, eventhubs/],
      [{ kind: "kafka", brokers: "h:1", topic: "t", sasl_username: "u" }, /security_protocol: is PLAINTEXT \(the default\).*sasl_username/i],
      [{ kind: "kafka", brokers: "h:1", topic: "t", security_protocol: "SASL_SSL", sasl_username: "u" }, /sasl_password: is required/],
      [{ kind: "kafka", brokers: "h:1", topic: "t", connection_string: "env:EH_CONN" }, /connection_string: is for kind eventhubs/],
      [{ kind: "eventhubs", topic: "t" }, /connection_string: is required for kind eventhubs/],
      [{ kind: "eventhubs", topic: "t", connection_string: "env:EH_CONN", sasl_username: "u" }, /sasl_username: is not used/],
      [{ kind: "eventhubs", topic: "t", connection_string: "env:EH_CONN", security_protocol: "PLAINTEXT" }, /security_protocol: is PLAINTEXT.*SASL_SSL/],
      [{ kind: "kafka", brokers: "h:1", topic: "t", security_protocol: "sasl_ssl" }, /securityProtocol: expected one of/],
      [{ kind: "kafka", brokers: "h:1", topic: "t", starting_offsets: "beginning" }, /startingOffsets: expected one of earliest, latest/],
    ];
    for (const [options, message] of cases) {
      expect(() => settings({ type: "stream", options })).toThrow(message);
    }
    expect(() => settings({ type: "stream", topic: "a", options: { kind: "kafka", brokers: "h:1", topic: "b" } })).toThrow(/topic: is given both/);
    expect(() => settings({ type: "stream", options: { kind: "eventhubs", topic: "t", connection_string: "env:X" } }, { X: "SharedAccessKey=abc" })).toThrow(
      /connection_string: has no `Endpoint=sb:/,
    );
  });

  it("creates the Kafka source on the process that creates it (references resolved there)", async () => {
    const prev = process.env.LL_TEST_BROKERS;
    process.env.LL_TEST_BROKERS = "127.0.0.1:1";
    try {
      const source = await createSource({ type: "stream", path: "rides", options: { kind: "kafka", brokers: "env:LL_TEST_BROKERS" } });
      expect(source.kind).toBe("cursor");
      await source.close?.();
      await expect(createSource({ type: "stream", path: "r", options: { kind: "kafka", brokers: "env:LL_TEST_UNSET_BROKERS" } })).rejects.toThrow(
        /brokers: refers to the environment variable LL_TEST_UNSET_BROKERS, which is not set/,
      );
    } finally {
      if (prev === undefined) delete process.env.LL_TEST_BROKERS;
      else process.env.LL_TEST_BROKERS = prev;
    }
  });
});

describe("kafka source: groupId", () => {
  it("is optional, with a stable default from the topic; env:KAFKA_BROKERS is accepted as brokers", () => {
    expect(resolveOptions("rides", { brokers: "h:9092" }).options.groupId).toBe("lakelogic-rides");
    expect(resolveOptions("rides", { brokers: "h:9092", consumerGroup: "g" }).options.groupId).toBe("g");
    const o = parseOptions(sourceSpecs().find((s) => s.type === "kafka")!, { type: "kafka", brokers: "env:KAFKA_BROKERS", topic: "t" }, ENV, { origin: "config" });
    expect(o["brokers"]).toEqual(["b1:9092", "b2:9092"]);
  });
});

describe("streamRunSettings", () => {
  const dir = "/contracts/bronze";
  const contract = (yaml: string) => parseContract(`dataset: rides\nmodel: {fields: [{name: id, type: long}]}\n${yaml}`, join(dir, "rides.yaml"));
  const stream = (options: string) => contract(`source:\n  type: stream\n  path: rides\n  options: {kind: kafka, brokers: env:KAFKA_BROKERS${options}}\n`);

  it("reads trigger, batch size, interval and checkpoint from the options; secrets stay references", () => {
    const s = streamRunSettings(
      stream(', trigger: continuous, processing_time: "30 seconds", batch_size: 500, max_offsets_per_trigger: 200, checkpoint: ck/rides, sasl_password: "env:KAFKA_PASSWORD", security_protocol: SASL_SSL, sasl_username: u'),
      {},
    );
    expect(s).toMatchObject({ mode: "continuous", maxWaitMs: 30_000, batchSize: 200, checkpoint: join(process.cwd(), "ck", "rides.sqlite") });
    expect((s.source!["options"] as Record<string, unknown>)["sasl_password"]).toBe("env:KAFKA_PASSWORD");
    expect((s.source!["options"] as Record<string, unknown>)["group_id"]).toBe("lakelogic-rides");
    // trigger: processing_time starts a batch every interval; beside continuous, the interval is the batch wait.
    expect(streamRunSettings(stream(", trigger: processing_time, processing_time: 30s, batch_size: 50"), {})).toMatchObject({ mode: "processing_time", intervalMs: 30_000, batchSize: 50 });
    expect(streamRunSettings(stream(", max_offsets_per_trigger: 70"), {}).batchSize).toBe(70);
    expect(streamRunSettings(stream(", group_id: mine"), {}).source!["options"]).toMatchObject({ group_id: "mine" });
  });

  it("defaults the checkpoint to _checkpoints/<dataset> beside the contract, or under $LAKELOGIC_CHECKPOINT_ROOT", () => {
    expect(streamRunSettings(stream(""), {}).checkpoint).toBe(join(dir, "_checkpoints", "rides.sqlite"));
    expect(streamRunSettings(stream(""), { LAKELOGIC_CHECKPOINT_ROOT: "/mnt/ck/" }).checkpoint).toBe("/mnt/ck/rides.sqlite");
    expect(streamRunSettings(stream(""), { LAKELOGIC_CHECKPOINT_ROOT: "s3://bucket/ck" }).checkpoint).toBe("s3://bucket/ck/rides");
    expect(streamRunSettings(stream(", checkpoint: abfss://c@acct.dfs.core.windows.net/ck/rides"), {}).checkpoint).toBe("abfss://c@acct.dfs.core.windows.net/ck/rides");
    expect(streamRunSettings(stream(", checkpoint: /var/ck/rides.db"), {}).checkpoint).toBe("/var/ck/rides.db");
    expect(streamRunSettings(stream(""), {}).mode).toBeUndefined();
  });

  it("takes the trigger and its interval from anywhere the contract writes them, for any source", () => {
    const top = streamRunSettings(contract("trigger: continuous\nprocessing_time: 2 minutes\nsource: {type: file, path: x.ndjson}\n"), {});
    expect(top).toEqual({ mode: "continuous", maxWaitMs: 120_000, source: { type: "file", path: "x.ndjson" } });
    expect(streamRunSettings(contract("trigger: {mode: processing_time, interval: 5s}\n"), {})).toEqual({ mode: "processing_time", intervalMs: 5000 });
    expect(streamRunSettings(contract("trigger: once\n"), {})).toEqual({ mode: "available_now" });
    expect(streamRunSettings(contract("source: {type: kafka, brokers: h:1, topic: t}\n"), {}).source).toMatchObject({ groupId: "lakelogic-rides" });
    expect(streamRunSettings(contract("source: {type: kafka, brokers: h:1, topic: t, consumer_group: g}\n"), {}).source).not.toHaveProperty("groupId");
    expect(() => streamRunSettings(contract("trigger: {mode: continuous, interval: 30}\n"), {})).toThrow(/processing_time: expected an interval/);
    expect(() => streamRunSettings(stream(", batch_size: 0"), {})).toThrow(/batchSize: expected a number >= 1/);
  });

  it("tells lint which transport a stream source names", () => {
    expect(streamSourceKind({ type: "stream", options: { kind: "EventHubs" } })).toBe("eventhubs");
    expect(streamSourceKind({ type: "stream", kind: "kafka" })).toBe("kafka");
    expect(streamSourceKind({ type: "stream", options: { kind: "files" } })).toBeUndefined();
    expect(streamSourceKind({ type: "kafka" })).toBeUndefined();
  });
});

describe("type: stream — literal secrets are found without creating the source", () => {
  it("assertNoLiteralSecrets sees sasl_password and connection_string under options:", async () => {
    const { assertNoLiteralSecrets } = await import("../../src/sources/registry.js");
    expect(() => assertNoLiteralSecrets({ type: "stream", options: { kind: "kafka", sasl_password: "hunter2" } })).toThrow(/sasl_password|saslPassword/);
    expect(() => assertNoLiteralSecrets({ type: "stream", options: { kind: "eventhubs", connection_string: CONN } })).toThrow(/connection_string|connectionString/);
    expect(() => assertNoLiteralSecrets({ type: "stream", options: { kind: "kafka", sasl_password: "env:KAFKA_PASSWORD" } })).not.toThrow();
    await expect(createSource({ type: "stream", options: ["kind", "kafka"] })).rejects.toThrow(/options: expected a mapping/);
  });
});
