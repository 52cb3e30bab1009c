/**
 * The Python package's StreamSink options that are not a mere respelling of one here: name →
 * the advice StreamSink's refusal of unknown options gives for it.
 */
export const PYTHON_SINK_OPTIONS: Readonly<Record<string, string>> = {
  window_seconds: 'use "maxWaitMs" (milliseconds)',
  processor: "the contract and engine options build the validator; pass an Engine as `engine` to supply your own",
};
