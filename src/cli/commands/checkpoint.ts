import { existsSync } from "node:fs";
import { encodeCursor } from "../../checkpoint/codec.js";
import { openCheckpointLocation } from "../../checkpoint/location.js";
import { ObjectStoreCheckpointStore } from "../../checkpoint/object-store.js";
import type { CheckpointRecord, CheckpointStore } from "../../checkpoint/types.js";
import { defaultCheckpointKey, loadContract } from "../../contract/index.js";
import type { Contract } from "../../contract/types.js";
import { ConfigError } from "../../errors.js";
import { resolveStreamSettings } from "../../pipeline/settings.js";
import { streamRunSettings } from "../../sources/index.js";
import {
  CURSOR_KINDS,
  PYTHON_DEFAULT_CHECKPOINT,
  convertPythonCheckpoint,
  readPythonCheckpoints,
  type CursorKind,
  type PythonCheckpointRow,
} from "../../python/checkpoint.js";
import { oneOf, parseCommandArgs } from "../args.js";
import { EXIT, subcommands, UsageError, type CliCommand, type CliIO } from "../types.js";

const usage = `Usage: lakelogic checkpoint import [CONTRACT] [options]

Copy stream checkpoints of the Python LakeLogic package (its SQLite file) into this runtime's
checkpoint store, so a migrated stream continues where the Python one stopped: same key, the
batch id continuing, the last batch's counts, the cursor in this runtime's form. Stop the Python
stream first. A checkpoint already there at the same or a later batch is left alone unless --force.

Options:
      --from PATH             the Python checkpoint file (default: a type: stream
                              contract's checkpoint, else ${PYTHON_DEFAULT_CHECKPOINT})
      --key KEY               import this key (repeatable); default: stream::<dataset> of
                              CONTRACT, or every key in the file without one
      --checkpoint LOCATION   where to write: a SQLite file (default: the one a run of
                              CONTRACT uses, <target>/_lakelogic/checkpoints.sqlite)
      --target-path DIR       the lake directory, for that default (default: the contract's)
      --cursor KIND           what the Python cursors are: ${CURSOR_KINDS.join(" | ")}
                              (default auto: recognises Kafka offsets only)
                                kafka      {"topic:partition": nextOffset}, kept as is
                                sse        the last event id, kept as is
                                watermark  WatermarkChunkSource's last value -> { watermark }
                                iterable   a count of records -> { offset, exhausted: false }
                                value      a cursor_fn value, kept as is (for cursorFn)
      --force                 replace a checkpoint at the same or a later batch
      --dry-run               show what would be written; write nothing
  -h, --help

Exit codes: 0 done, 1 a checkpoint was left alone (nothing written), 2 usage.
`;

type Action = "import" | "replace" | "unchanged" | "refuse";

interface Step {
  record: CheckpointRecord;
  existing: CheckpointRecord | undefined;
  action: Action;
}

/** What to do with one imported record, given what the destination holds under its key. */
function decide(record: CheckpointRecord, existing: CheckpointRecord | undefined, force: boolean): Action {
  if (!existing) return "import";
  if (existing.batchId === record.batchId && encodeCursor(existing.cursor) === encodeCursor(record.cursor)) return "unchanged";
  if (existing.batchId >= record.batchId && !force) return "refuse";
  return "replace";
}

interface Overwritable extends CheckpointStore {
  overwrite(record: CheckpointRecord): Promise<void>;
}

function canOverwrite(store: CheckpointStore): store is Overwritable {
  return typeof (store as Partial<Overwritable>).overwrite === "function";
}

/**
 * An imported record continues a batch count this store never saw, so it is written without
 * compare-and-set: only a store with `overwrite` (SQLite) can take it, or any store a first batch.
 */
function writable(store: CheckpointStore, step: Step): boolean {
  return canOverwrite(store) || (step.existing === undefined && step.record.batchId === 1);
}

async function write(store: CheckpointStore, step: Step): Promise<void> {
  if (canOverwrite(store)) await store.overwrite(step.record);
  else await store.commit(step.record);
}

function show(step: Step): string {
  const { record, existing } = step;
  const cursor = encodeCursor(record.cursor);
  const was = existing ? ` (was batch ${existing.batchId}, committed ${existing.committedAt.toISOString()})` : "";
  return `${record.key}: batch ${record.batchId}, cursor ${cursor.length > 160 ? `${cursor.slice(0, 157)}...` : cursor}${was}`;
}

const isUri = (location: string): boolean => /^[a-z][a-z0-9+.-]*:\/\//i.test(location);

/**
 * The Python package's checkpoints of `keys` in an object store: one JSON object per key
 * (`<prefix>/<key with unsafe characters as _>.json`). An object store cannot be listed here, so
 * the keys must be known (from CONTRACT or --key).
 */
async function readPythonObjects(location: string, keys: readonly string[] | undefined): Promise<PythonCheckpointRow[]> {
  if (keys === undefined) throw new UsageError(`--from ${location}: name the stream (CONTRACT or --key KEY); an object store is not listed`);
  const store = await openCheckpointLocation(location);
  try {
    if (!(store instanceof ObjectStoreCheckpointStore)) throw new UsageError(`--from ${location}: expected a SQLite file or an object-store location`);
    const rows: PythonCheckpointRow[] = [];
    for (const key of keys) {
      const body = await store.pythonCheckpoint(key);
      if (body === undefined) continue;
      const count = (name: string): number | null => (typeof body[name] === "number" ? (body[name]) : null);
      rows.push({
        key,
        cursorJson: JSON.stringify(body["cursor"] ?? null),
        batchId: Number(body["batch_id"] ?? 0),
        committedAt: typeof body["committed_at"] === "string" ? body["committed_at"] : null,
        sourceCount: count("source_count"),
        goodCount: count("good_count"),
        badCount: count("bad_count"),
      });
    }
    return rows;
  } finally {
    await store.close();
  }
}

function destination(values: { checkpoint?: string; "target-path"?: string }, contract: Contract | undefined): string {
  const given = values.checkpoint;
  if (given === "target" || given === "memory") {
    throw new UsageError(`--checkpoint ${given} cannot take an import; give a SQLite file (the default of lakelogic run is <target>/_lakelogic/checkpoints.sqlite)`);
  }
  if (given !== undefined) return given;
  if (!contract) throw new UsageError("give --checkpoint LOCATION, or a CONTRACT whose default checkpoint file to write");
  // A type: stream contract keeps its checkpoint where the run looks for it (its own, or beside the contract).
  const { checkpoint } = resolveStreamSettings(contract, values["target-path"] === undefined ? {} : { targetPath: values["target-path"] });
  if (typeof checkpoint !== "string") throw new UsageError("give --checkpoint LOCATION: the contract names no checkpoint file");
  return checkpoint;
}

async function importCheckpoints(args: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseCommandArgs(args, {
    from: { type: "string" },
    key: { type: "string", multiple: true },
    checkpoint: { type: "string" },
    "target-path": { type: "string" },
    cursor: { type: "string" },
    force: { type: "boolean" },
    "dry-run": { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) {
    io.stdout(usage);
    return EXIT.ok;
  }
  if (positionals.length > 1) throw new UsageError(`expected at most one CONTRACT; got ${positionals.join(" ")}`);
  const kind = oneOf<CursorKind>("--cursor", values.cursor, CURSOR_KINDS, "auto");
  const contractPath = positionals[0];
  if (contractPath !== undefined && !existsSync(contractPath)) throw new UsageError(`contract not found: ${contractPath}`);
  const contract = contractPath === undefined ? undefined : await loadContract(contractPath);
  const where = destination(values, contract);
  // The Python package keeps a type: stream contract's checkpoint at the same location the run uses.
  const declared = contract === undefined ? undefined : streamRunSettings(contract).checkpoint;
  const from = values.from ?? (declared !== undefined && (isUri(declared) || existsSync(declared)) ? declared : PYTHON_DEFAULT_CHECKPOINT);
  if (!isUri(from) && !existsSync(from)) throw new UsageError(`--from: no file ${from}`);

  const wanted = values.key ?? (contract ? [defaultCheckpointKey(contract)] : undefined);
  const rows = isUri(from) ? await readPythonObjects(from, wanted) : readPythonCheckpoints(from);
  const keys = wanted ?? rows.map((r) => r.key);
  const missing = keys.filter((k) => !rows.some((r) => r.key === k));
  if (missing.length > 0) {
    const held = rows.length === 0 ? "none" : rows.map((r) => r.key).join(", ");
    throw new UsageError(`${from} has no checkpoint ${missing.map((k) => `"${k}"`).join(", ")}; it holds: ${held}`);
  }
  // Every cursor is converted before anything is opened or written.
  const records = rows.filter((r) => keys.includes(r.key)).map((r) => convertPythonCheckpoint(r, kind));

  const store = await openCheckpointLocation(where);
  try {
    const steps: Step[] = [];
    for (const record of records) {
      const existing = await store.load(record.key);
      steps.push({ record, existing, action: decide(record, existing, values.force === true) });
    }
    const refused = steps.filter((s) => s.action === "refuse");
    if (refused.length > 0) {
      for (const s of refused) {
        io.stderr(
          `lakelogic checkpoint import: ${where} already holds "${s.record.key}" at batch ${s.existing!.batchId}, ` +
            `not older than the Python checkpoint's batch ${s.record.batchId}; nothing was written. ` +
            `Pass --force to replace it (the stream then resumes from the Python cursor).\n`,
        );
      }
      return EXIT.failed;
    }
    const stuck = steps.find((s) => s.action !== "unchanged" && !writable(store, s));
    if (stuck) {
      throw new ConfigError(
        "--checkpoint",
        `${where} cannot take an imported checkpoint at batch ${stuck.record.batchId} (this store only commits batch after batch); import into a SQLite file or an object store`,
      );
    }
    const verb = { import: "imported", replace: "replaced", unchanged: "unchanged", refuse: "refused" } as const;
    for (const s of steps) {
      if (!values["dry-run"] && s.action !== "unchanged") await write(store, s);
      io.stdout(`${values["dry-run"] && s.action !== "unchanged" ? `would be ${verb[s.action]}` : verb[s.action]} ${show(s)}\n`);
    }
    if (steps.length === 0) io.stdout(`${from} holds no checkpoints\n`);
    return EXIT.ok;
  } finally {
    await store.close();
  }
}

export const checkpointCommand: CliCommand = subcommands(usage, { import: importCheckpoints });
