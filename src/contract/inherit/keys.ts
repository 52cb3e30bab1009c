/** Which registry keys this runtime uses; every other key gets a warning naming it. */
import type { RegistryFile, RegistryFiles } from "./registry-files.js";

/** Keys that change what a contract does here. */
const USED = new Set([
  "domain", "system", "bronze_layer", "silver_layer", "gold_layer", "storage", "environments", "contracts",
  "materialization", "quarantine", "server", "lineage",
]);

/** Keys of the original that this runtime reads past, and why. */
const UNSUPPORTED: Record<string, string> = {
  slo: "service-level objectives are not checked by this runtime",
  ownership: "ownership is not used by this runtime",
  notifications: "notifications are not sent by this runtime",
  notifications_enabled: "notifications are not sent by this runtime",
  compliance: "compliance checks are not made by this runtime",
  cost: "cost is not tracked by this runtime",
  observatory: "Observatory telemetry is not sent by this runtime",
  retention: "retention is not applied by this runtime",
  metadata: "run-log metadata is not used by this runtime",
  cloud: "cloud reporting is not used by this runtime",
  external_sources: "cross-domain lineage is not used by this runtime",
  extraction_defaults: "LLM extraction is not performed by this runtime",
  test_data: "test-data generation is not performed by this runtime",
  storage_mode: "this runtime writes to paths: `{<layer>_root}` means `{<layer>_path}` when that is given",
};

export interface KeyWarning {
  file: RegistryFile;
  key: string;
  message: string;
}

export function registryKeyWarnings(files: RegistryFiles): KeyWarning[] {
  const out: KeyWarning[] = [];
  for (const file of [files.domain, files.system]) {
    if (file === undefined) continue;
    for (const key of Object.keys(file.data)) {
      // `x-…` and `_…` keys hold YAML anchors and comments-as-data.
      if (USED.has(key) || key.startsWith("x-") || key.startsWith("_")) continue;
      const why = UNSUPPORTED[key];
      out.push({ file, key, message: why !== undefined ? `${key} is ignored: ${why}` : `unknown registry key '${key}' is ignored` });
    }
  }
  return out;
}
