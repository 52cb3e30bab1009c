/**
 * One durable workflow per stream (id `lakelogic:<checkpointKey>`). Deterministic orchestration
 * only: every read, validation and write happens in activities over the shared batch core.
 *
 * Per fetch: fetchBatch → writeBatches, all on one worker, because the rows wait in that worker's
 * spool (I4): fetchBatch through the worker-specific task queue of the worker executing this
 * workflow, writeBatches as a local activity in that same worker, writing, committing (and for a
 * queue acknowledging, I8) each batch the fetch handed over in turn (the write validates; the
 * worker started the validation when it fetched). The cursor advances in workflow state after
 * each commit. If the worker disappears, the batch restarts from fetchBatch on another worker,
 * from the position the checkpoint store holds.
 * Each fetch says whether the loop means to fetch again (wantsReadAhead): then the worker collects
 * and validates the next batches while these are written, and the next fetch hands over, with its
 * first batch, those already collected (up to batchesPerFetch). That next fetch is first asked of
 * the worker itself, as a local activity (takeReadAhead), up to localFetchesPerRoundTrip times in
 * a row; a fetch through the server then lets signals in.
 *
 * processing_time: one batch per trigger, nothing read ahead; between triggers the workflow waits
 * on a durable timer (the activities never sleep for the interval), woken early by stop or pause.
 * An empty trigger writes nothing. Only this mode starts timers, so histories of the other modes
 * replay unchanged.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  TimeoutFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from "@temporalio/workflow";
import { decodeCursorForDisplay } from "./display.js";
import { nextTriggerAt } from "../src/pipeline/trigger.js";
import type { RuleTotals } from "../src/pipeline/rule-tally.js";
import {
  afterCommit,
  withRules,
  fetchLocally,
  fetchSize,
  initialCarry,
  reachedMaxBatches,
  resultOf,
  resync,
  shouldContinueAsNew,
  stateOf,
  statusOf,
  wantsReadAhead,
  type Control,
  type Phase,
} from "./state.js";
import type {
  StreamCarry,
  StreamLag,
  StreamSpec,
  StreamState,
  StreamStatus,
  StreamWorkflowInput,
  StreamWorkflowResult,
  WriteBatchResult,
  BatchActivities,
  FetchBatchInput,
  FetchBatchResult,
  SharedActivities,
} from "./types.js";

export const pauseSignal = defineSignal("pause");
export const resumeSignal = defineSignal("resume");
export const stopSignal = defineSignal("stop");
export const statusQuery = defineQuery<StreamStatus>("status");

const shared = proxyActivities<SharedActivities>({
  startToCloseTimeout: "1 minute",
  // Errors that a retry cannot fix (a bad contract, a rival writer …) arrive non-retryable: the
  // activities mark them so from the error's own `retriable` (activities/index.ts).
  retry: { initialInterval: "1 second", maximumAttempts: 10 },
});

/**
 * getWorkerQueue, takeReadAhead and writeBatches run as local activities: in the worker process
 * that executes this workflow task, which is the worker whose queue fetched the batches (its
 * spool is there). They cost one marker event each instead of six events, and no round trip
 * through the server.
 */
const local = proxyLocalActivities<SharedActivities & BatchActivities>({
  startToCloseTimeout: "10 minutes",
  localRetryThreshold: "10 seconds",
  retry: { initialInterval: "1 second", maximumAttempts: 5 },
});

/** fetchBatch runs on the worker-specific queue of the worker that will validate and write. */
function fetchActivity(queue: string, t: StreamWorkflowInput["timeouts"] = {}) {
  return proxyActivities<Pick<BatchActivities, "fetchBatch">>({
    taskQueue: queue,
    // A dead worker never starts the task: this is how the workflow notices and moves the batch.
    scheduleToStartTimeout: t.scheduleToStartMs ?? 60_000,
    startToCloseTimeout: t.startToCloseMs ?? 10 * 60_000,
    heartbeatTimeout: t.heartbeatMs ?? 30_000,
    retry: { initialInterval: "1 second", maximumAttempts: 5 },
  });
}

/** The worker that held the batch is gone (or its spool is): restart the batch elsewhere. */
function workerLost(err: unknown): boolean {
  // A local activity's failure may arrive unwrapped; a remote one inside an ActivityFailure.
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof TimeoutFailure) return err instanceof ActivityFailure;
  return cause instanceof ApplicationFailure && cause.type === "SpoolMissingError";
}

/** What every activity needs to read, validate and write the stream (the input without its controls). */
function specOf(input: StreamWorkflowInput): StreamSpec {
  return {
    contract: input.contract,
    source: input.source,
    mode: input.mode,
    checkpointKey: input.checkpointKey,
    batchSize: input.batchSize,
    maxBatchBytes: input.maxBatchBytes,
    maxRecordBytes: input.maxRecordBytes,
    resetCheckpoint: input.resetCheckpoint,
    maxWaitMs: input.maxWaitMs,
    targetPath: input.targetPath,
    engine: input.engine,
    checkpoint: input.checkpoint,
    // The activities load the contract: its placeholders' values and registry environment go too.
    vars: input.vars,
    environment: input.environment,
  };
}

/**
 * processing_time: when the current trigger started (workflow time, deterministic; set by the
 * run's first fetch) and how many ran. Triggers, empty ones too, count toward continue-as-new,
 * so an idle stream's history stays bounded.
 */
interface Trigger {
  everyMs: number;
  startedAt?: number;
  count: number;
}

/**
 * Wait for the next trigger on a durable timer to its boundary (none when the batch overran it).
 * Stop and pause end the wait early; the loop's top handles them.
 */
async function nextTrigger(trigger: Trigger, control: Control): Promise<void> {
  trigger.count++;
  const next = nextTriggerAt(trigger.startedAt ?? Date.now(), trigger.everyMs, Date.now());
  if (next > Date.now()) await condition(() => control.stopRequested || control.paused, next - Date.now());
  trigger.startedAt = next;
}

/**
 * The fetches of one run: through the server (fetchBatch on the worker's queue), or — after a
 * fetch that left the worker reading ahead, at most localFetchesPerRoundTrip in a row — served by
 * that worker's read-ahead as a local activity (takeReadAhead; null when it holds none).
 */
class Fetches {
  /** The last fetch left the worker reading ahead. */
  private readingAhead = false;
  /** Fetches served locally since the last one through the server (which lets signals in). */
  private localInARow = 0;

  constructor(private readonly input: StreamWorkflowInput) {}

  async next(queue: string, request: FetchBatchInput): Promise<FetchBatchResult> {
    const tryLocal = fetchLocally(this.input, this.readingAhead, this.localInARow);
    const here = tryLocal ? await local.takeReadAhead(request) : null;
    const fetched = here ?? (await fetchActivity(queue, this.input.timeouts).fetchBatch(request));
    this.localInARow = here ? this.localInARow + 1 : 0;
    // As the worker decides it (stream-runtime's fetchFrom): a cursor source reads ahead after a batch with records.
    const last = fetched.more?.at(-1) ?? fetched;
    this.readingAhead = request.readAhead === true && !fetched.ackSource && last.count > 0 && !last.exhausted;
    return fetched;
  }

  /** The worker was lost, and whatever it read ahead with it. */
  workerLost(): void {
    this.readingAhead = false;
  }
}

/** What writing a stream's batches needs. */
interface Writer {
  spec: StreamSpec;
  writerId: string;
}

/**
 * Write and commit the batches of one fetch in order. `commit` advances the workflow's state after
 * each commit, as it happens (I1), so a failure part-way keeps what was committed before it;
 * `carry` reads that state.
 */
async function writeFetched(
  w: Writer,
  carry: () => StreamCarry,
  commit: (cursor: string | null, written: WriteBatchResult) => void,
  tally: (rules: RuleTotals | undefined) => void,
  batches: ReadonlyArray<{ spool: string | null; cursor: string | null }>,
  ackSource: boolean,
): Promise<void> {
  const previous = () => ({ cursor: carry().cursor, batchId: carry().batchId, totals: carry().totals });
  let pending = batches;
  while (pending.length > 0) {
    const request = pending.map((b) => ({ fetched: b.spool, cursor: b.cursor }));
    // Each batch is validated, written, committed and (queues, I8: only after the commit) acknowledged in turn.
    const { written, rules } = await local.writeBatches({ spec: w.spec, key: carry().key, writerId: w.writerId, previous: previous(), batches: request, ack: ackSource });
    // A failure of the first batch fails the call: an empty result would loop forever.
    if (written.length === 0) throw ApplicationFailure.nonRetryable("writeBatches committed no batch and reported no error", "WriteBatchesEmpty");
    written.forEach((result, i) => commit(pending[i]!.cursor, result));
    tally(rules);
    pending = pending.slice(written.length);
  }
}

export async function streamWorkflow(input: StreamWorkflowInput): Promise<StreamWorkflowResult> {
  const spec = specOf(input);
  // The starting position comes from the checkpoint store, so StreamSink and this workflow can
  // take turns on one stream; after continue-as-new it is carried instead.
  let carry: StreamCarry = input.carry ?? initialCarry(await shared.openStream(spec), new Date().toISOString());
  let endCursor: string | null | undefined = input.carry?.endCursor;
  const control: Control = { paused: carry.paused, stopRequested: false };
  let lag: StreamLag | null = null;
  let phase: Phase = "working";
  let publishedState: StreamState | undefined;

  setHandler(pauseSignal, () => void (control.paused = true));
  setHandler(resumeSignal, () => void (control.paused = false));
  setHandler(stopSignal, () => void (control.stopRequested = true));
  setHandler(statusQuery, () => statusOf(carry, stateOf(control, phase), input.mode, lag, decodeCursorForDisplay));

  const publish = () => {
    const state = stateOf(control, phase);
    if (state === publishedState) return;
    publishedState = state;
    upsertSearchAttributes({
      LakeLogicStreamKey: [carry.key],
      LakeLogicDataset: [carry.dataset],
      LakeLogicMode: [input.mode],
      LakeLogicState: [state],
    });
  };

  const writer: Writer = { spec, writerId: `temporal:${workflowInfo().workflowId}` };
  const committed = (cursor: string | null, written: WriteBatchResult) => {
    carry = afterCommit(carry, cursor, written);
    batchesThisRun++;
  };
  let queue: string | undefined;
  let batchesThisRun = 0;
  const trigger: Trigger | undefined = input.mode === "processing_time" ? { everyMs: Math.max(0, input.intervalMs ?? 0), count: 0 } : undefined;
  let stoppedBy: StreamWorkflowResult["stoppedBy"] = "end";
  const fetches = new Fetches(input);

  publish();
  while (true) {
    if (control.paused && !control.stopRequested) {
      phase = "parked";
      publish();
      await condition(() => !control.paused || control.stopRequested);
      phase = "working";
    }
    if (control.stopRequested) {
      stoppedBy = "stop";
      break;
    }
    publish();
    if (reachedMaxBatches(input, carry)) {
      stoppedBy = "max-batches";
      break;
    }
    if (shouldContinueAsNew(input, trigger ? trigger.count : batchesThisRun, workflowInfo().continueAsNewSuggested)) {
      await condition(allHandlersFinished);
      return continueAsNew<typeof streamWorkflow>({
        ...input,
        carry: { ...carry, paused: control.paused, endCursor },
      });
    }

    // The worker executing this workflow task names its own queue, so the fetch lands where
    // the local activities that follow will run.
    queue ??= await local.getWorkerQueue();
    try {
      const size = trigger ? 1 : fetchSize(input, carry, batchesThisRun);
      // The first trigger of a run starts with its first fetch; the next ones on the schedule.
      if (trigger) trigger.startedAt ??= Date.now();
      const fetchInput = {
        spec,
        key: carry.key,
        cursor: carry.cursor,
        batchId: carry.batchId,
        endCursor,
        // processing_time: the pipeline waits at most maxWaitMs for a first record (an empty trigger).
        idleMs: trigger ? undefined : input.timeouts?.idleFetchMs,
        readAhead: !trigger && wantsReadAhead(input, carry, control, batchesThisRun, workflowInfo().continueAsNewSuggested, size),
        ...(size > 1 ? { maxBatches: size } : {}),
      };
      const fetched = await fetches.next(queue, fetchInput);
      if (fetched.endCursor !== undefined) endCursor = fetched.endCursor;
      lag = fetched.lag;
      // Every batch handed over is written, in order, before signals (which come with the task after a
      // fetch through the server) are looked at: at most batchesPerFetch × (1 + localFetchesPerRoundTrip).
      const batches = [{ ...fetched, write: fetched.count > 0 || fetched.cursorMoved }, ...(fetched.more ?? []).map((m) => ({ ...m, write: true }))];
      await writeFetched(writer, () => carry, committed, (rules) => (carry = withRules(carry, rules)), batches.filter((b) => b.write), fetched.ackSource);
      if (batches[batches.length - 1]!.exhausted) break;
    } catch (err) {
      if (!workerLost(err)) throw err;
      queue = undefined;
      fetches.workerLost();
      // Never back to a worker's own empty store: the activity fails if it is behind the carry.
      carry = resync(carry, await shared.openStream(spec, carry.batchId));
      continue; // the same trigger, fetched again from the store's position
    }
    if (trigger && !control.stopRequested && !reachedMaxBatches(input, carry)) await nextTrigger(trigger, control);
  }
  phase = "finished";
  publish();
  return resultOf(carry, stoppedBy, new Date().toISOString(), decodeCursorForDisplay);
}
