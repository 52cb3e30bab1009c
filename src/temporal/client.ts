import {
  Client,
  Connection,
  ScheduleOverlapPolicy,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  type WorkflowHandle,
  type WorkflowHandleWithFirstExecutionRunId,
} from "@temporalio/client";
import { defaultCheckpointKey, loadContract } from "../contract/index.js";
import { ConfigError, NonRetriableError } from "../errors.js";
import { assertNoLiteralSecrets } from "../sources/registry.js";
import type { MaintainWorkflowInput, StreamStatus, StreamWorkflowInput, StreamWorkflowResult } from "../../workflows/types.js";
import { DEFAULT_TASK_QUEUE } from "./worker.js";

export const WORKFLOW_TYPE = "streamWorkflow";
export const MAINTAIN_WORKFLOW_TYPE = "maintainWorkflow";

/** The workflow id of a maintenance schedule's runs (Temporal appends each run's time). */
export function maintainWorkflowId(scheduleName: string): string {
  return `lakelogic-maintain:${scheduleName}`;
}

/** The workflow id of a stream: one workflow per checkpoint key (I3). */
export function streamWorkflowId(checkpointKey: string): string {
  return `lakelogic:${checkpointKey}`;
}

export interface ClientOptions {
  address?: string;
  namespace?: string;
  taskQueue?: string;
  /** How long the first connection may take (the SDK's default is 10 s). */
  connectTimeoutMs?: number;
}

export class StreamAlreadyRunningError extends NonRetriableError {
  constructor(readonly workflowId: string) {
    super(
      "STREAM_ALREADY_RUNNING",
      `stream workflow ${workflowId} is already running: one writer per checkpoint key. ` +
        `Use "lakelogic status" to see it, or "lakelogic stop" to end it first.`,
    );
  }
}

/**
 * No workflow `lakelogic:<key>` on the server: no stream of that key ever ran on Temporal here
 * (or its history is past the namespace's retention). A failed command (exit 1).
 */
export class StreamNotFoundError extends NonRetriableError {
  constructor(
    readonly workflowId: string,
    readonly checkpointKey: string,
  ) {
    super("STREAM_NOT_FOUND", `no stream named ${checkpointKey}: the Temporal server has no workflow ${workflowId}`);
  }
}

/**
 * A stream's workflow is closed and did not succeed (failed, terminated, cancelled, timed out):
 * the message says why, from the failure Temporal recorded — the activity's own error (a bad
 * contract, a rival writer, an unreachable broker after its retries), not the SDK's wrapper.
 */
export class StreamFailedError extends NonRetriableError {
  constructor(
    readonly workflowId: string,
    /** How the workflow closed, e.g. `failed`, `terminated`. */
    readonly outcome: string,
    /** The cause, as `ErrorType: message`. */
    readonly reason: string,
  ) {
    super("STREAM_FAILED", `stream workflow ${workflowId} ${outcome}: ${reason}`);
  }
}

/** The innermost failure Temporal recorded, as `Type: message` (the SDK's wrappers say only where it happened). */
export function failureReason(err: unknown): string {
  let message = err instanceof Error ? err.message : String(err);
  let type: string | undefined;
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    const t = (e as { type?: unknown }).type;
    if (typeof t === "string" && t !== "") type = t;
    if (e.message) message = e.message;
  }
  return type === undefined ? message : `${type}: ${message}`;
}

/** A client for LakeLogic's streams on a Temporal cluster. */
export class StreamClient {
  private constructor(
    readonly client: Client,
    private readonly connection: Connection,
    readonly taskQueue: string,
  ) {}

  static async connect(options: ClientOptions = {}): Promise<StreamClient> {
    const address = options.address ?? process.env.TEMPORAL_ADDRESS ?? "127.0.0.1:7233";
    const connection = await Connection.connect({ address, ...(options.connectTimeoutMs !== undefined ? { connectTimeout: options.connectTimeoutMs } : {}) });
    const client = new Client({ connection, namespace: options.namespace ?? process.env.TEMPORAL_NAMESPACE ?? "default" });
    return new StreamClient(client, connection, options.taskQueue ?? DEFAULT_TASK_QUEUE);
  }

  /** The checkpoint key a stream input resolves to (reads the contract for the default). */
  static async checkpointKeyOf(input: Pick<StreamWorkflowInput, "checkpointKey" | "contract">): Promise<string> {
    if (input.checkpointKey) return input.checkpointKey;
    return defaultCheckpointKey(await loadContract(input.contract));
  }

  async start(input: StreamWorkflowInput): Promise<WorkflowHandleWithFirstExecutionRunId> {
    // The input is kept in the workflow's history: refuse a literal secret before it gets there.
    assertNoLiteralSecrets(input.source);
    const key = await StreamClient.checkpointKeyOf(input);
    const workflowId = streamWorkflowId(key);
    try {
      return await this.client.workflow.start(WORKFLOW_TYPE, {
        taskQueue: this.taskQueue,
        workflowId,
        args: [{ ...input, checkpointKey: key }],
      });
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) throw new StreamAlreadyRunningError(workflowId);
      throw err;
    }
  }

  handle(checkpointKey: string): WorkflowHandle {
    return this.client.workflow.getHandle(streamWorkflowId(checkpointKey));
  }

  /**
   * The stream's status (query `status`). A workflow that closed without success answers with
   * StreamFailedError and its cause: a failed workflow cannot be asked, and Temporal's own answer
   * (a query not registered, a closed workflow) would not say why it stopped.
   */
  async status(checkpointKey: string): Promise<StreamStatus> {
    const handle = this.handle(checkpointKey);
    try {
      return await handle.query<StreamStatus>("status");
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new StreamNotFoundError(handle.workflowId, checkpointKey);
      const described = await handle.describe().catch(() => undefined);
      const outcome = described?.status.name;
      if (outcome === undefined || outcome === "RUNNING" || outcome === "COMPLETED") throw err;
      const reason = await handle.result().then(
        () => outcome.toLowerCase(),
        (failure: unknown) => failureReason(failure),
      );
      throw new StreamFailedError(handle.workflowId, outcome.toLowerCase().replace(/_/g, " "), reason);
    }
  }

  async signal(checkpointKey: string, signal: "pause" | "resume" | "stop"): Promise<void> {
    const handle = this.handle(checkpointKey);
    await handle.signal(signal).catch((err: unknown) => {
      throw err instanceof WorkflowNotFoundError ? new StreamNotFoundError(handle.workflowId, checkpointKey) : err;
    });
  }

  /** The stream's result once it ends; StreamFailedError with the cause when it did not succeed. */
  async result(checkpointKey: string): Promise<StreamWorkflowResult> {
    const handle = this.handle(checkpointKey);
    try {
      return (await handle.result()) as StreamWorkflowResult;
    } catch (err) {
      if (!(err instanceof WorkflowFailedError)) throw err;
      throw new StreamFailedError(handle.workflowId, "failed", failureReason(err.cause ?? err));
    }
  }

  /** Running streams, from the search attributes the workflow publishes. */
  async list(): Promise<Array<{ workflowId: string; key: string; state: string; dataset: string; mode: string }>> {
    const out = [];
    for await (const wf of this.client.workflow.list({ query: `WorkflowType = '${WORKFLOW_TYPE}' AND ExecutionStatus = 'Running'` })) {
      // The workflow publishes each of these as one Keyword (a string).
      const sa = wf.searchAttributes as Record<string, string[] | undefined>;
      out.push({
        workflowId: wf.workflowId,
        key: sa.LakeLogicStreamKey?.[0] ?? wf.workflowId.replace(/^lakelogic:/, ""),
        state: sa.LakeLogicState?.[0] ?? "unknown",
        dataset: sa.LakeLogicDataset?.[0] ?? "",
        mode: sa.LakeLogicMode?.[0] ?? "",
      });
    }
    return out;
  }

  /**
   * A Temporal Schedule that starts an available_now drain every `everyMs`. Overlap SKIP: a
   * drain still running when the next is due is not doubled. Each drain starts from the
   * checkpoint store, not from the previous run's result.
   */
  async createSchedule(name: string, input: StreamWorkflowInput, everyMs: number): Promise<void> {
    assertNoLiteralSecrets(input.source);
    const key = await StreamClient.checkpointKeyOf(input);
    await this.client.schedule.create({
      scheduleId: name,
      spec: { intervals: [{ every: everyMs }] },
      action: {
        type: "startWorkflow",
        workflowType: WORKFLOW_TYPE,
        taskQueue: this.taskQueue,
        workflowId: streamWorkflowId(key),
        args: [{ ...input, mode: "available_now", checkpointKey: key }],
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP },
    });
  }

  /**
   * A Temporal Schedule that maintains a contract's lake tables every `everyMs`
   * (workflows/maintain.ts). Overlap SKIP: a run still compacting when the next is due is not
   * doubled. Safe beside the contract's stream, which it never stops.
   */
  async createMaintenanceSchedule(name: string, input: MaintainWorkflowInput, everyMs: number): Promise<void> {
    await this.client.schedule.create({
      scheduleId: name,
      spec: { intervals: [{ every: everyMs }] },
      action: {
        type: "startWorkflow",
        workflowType: MAINTAIN_WORKFLOW_TYPE,
        taskQueue: this.taskQueue,
        workflowId: maintainWorkflowId(name),
        args: [input],
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP },
    });
  }

  async deleteSchedule(name: string): Promise<void> {
    await this.client.schedule.getHandle(name).delete();
  }

  async triggerSchedule(name: string): Promise<void> {
    await this.client.schedule.getHandle(name).trigger(ScheduleOverlapPolicy.SKIP);
  }

  async close(): Promise<void> {
    await this.connection.close();
  }
}

/** `15m`, `1h`, `30s`, `2d` or plain milliseconds. */
export function parseDuration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/.exec(text.trim());
  if (!m) throw new ConfigError("duration", `"${text}" is not a duration; expected e.g. 30s, 15m, 1h, 2d`);
  const n = Number(m[1]);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[(m[2] ?? "ms") as "ms"];
  return Math.round(n * unit);
}
