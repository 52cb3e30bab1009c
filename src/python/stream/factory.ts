import type { SourceFactory } from "../../sources/core/registry.js";
import type { Source } from "../../sources/core/types.js";
import { kafkaSettings, type StreamKafkaOptions } from "./kafka-settings.js";
import { mergeStreamOptions } from "./options.js";
import { streamSpec } from "./spec.js";

/** Opens the `kafka` source; given by `sources/registry.ts`, since a transport folder imports no other. */
export type OpenKafka = (topic: string, options: StreamKafkaOptions) => Source;

/**
 * `{ "type": "stream", "path": "rides", "options": { "kind": "kafka", ... } }` → the `kafka`
 * source. It runs where the source is created — for Temporal, on the worker — so `env:`
 * references are resolved there and stay references in the workflow input.
 */
export function streamSourceFactory(openKafka: OpenKafka): SourceFactory<typeof streamSpec> {
  return {
    spec: streamSpec,
    create: (parsed) => {
      const { topic, options } = kafkaSettings(mergeStreamOptions(parsed));
      return openKafka(topic, options);
    },
  };
}
