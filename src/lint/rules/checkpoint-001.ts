import { checkpointLocationProblem } from "../../checkpoint/location.js";
import type { YamlPath } from "../../contract/yaml.js";
import type { ContractRule, RuleHit } from "../types.js";

/** Where a contract names its checkpoint: the Python `type: stream` options, or the source itself. */
const CHECKPOINT_PATHS: readonly YamlPath[] = [
  ["source", "options", "checkpoint"],
  ["source", "checkpoint"],
];

export const checkpoint001: ContractRule = {
  id: "CHECKPOINT-001",
  severity: "critical",
  name: "UnknownCheckpointLocation",
  title: "Checkpoint location no store can open",
  description:
    "The checkpoint location in `source.options.checkpoint` (or `source.checkpoint`) is a URI whose scheme " +
    "no checkpoint store reads (e.g. `ftp://`), or a URI that is not valid. Opening the checkpoint fails, " +
    "so the run never reads; taking it for a local file name instead would keep the read position where " +
    "no other run finds it.",
  fix:
    "Give a local SQLite file path, or an object-store URI: `s3://<bucket>/<path>`, `gs://<bucket>/<path>`, " +
    "`abfss://<container>@<account>.dfs.core.windows.net/<path>`.",
  tags: ["checkpoint", "streaming"],
  scope: "contract",
  examples: {
    bad: `dataset: rides
primary_key: [ride_id]
source:
  type: stream
  options:
    kind: kafka
    brokers: env:KAFKA_BROKERS
    topic: rides
    checkpoint: ftp://backup.example.com/checkpoints/rides
materialization:
  strategy: merge
`,
    good: `dataset: rides
primary_key: [ride_id]
source:
  type: stream
  options:
    kind: kafka
    brokers: env:KAFKA_BROKERS
    topic: rides
    checkpoint: s3://lake-state/checkpoints/rides
materialization:
  strategy: merge
`,
  },
  check(contract) {
    const hits: RuleHit[] = [];
    for (const path of CHECKPOINT_PATHS) {
      const location = contract.get(path);
      if (typeof location !== "string" || location.trim() === "") continue;
      const problem = checkpointLocationProblem(location.trim());
      if (problem === undefined) continue;
      hits.push({
        message: `The checkpoint location cannot be opened: ${problem}.`,
        suggestion: "Use a local SQLite file path, or an s3://, gs:// or abfss:// location.",
        path,
      });
    }
    return hits;
  },
};
