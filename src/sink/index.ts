export { StreamSink, StreamRunError, RUN_MODES } from "./stream-sink.js";
export type { StreamSinkOptions, StreamSinkSource, RunOptions, SinkRunOptions, BatchReport, StreamRunSummary, StopReason, StreamStart } from "./stream-sink.js";
export type { CheckpointOption } from "../pipeline/settings.js";
export { DEFAULT_TARGET_PATH } from "../pipeline/settings.js";
