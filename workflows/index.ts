export { streamWorkflow, pauseSignal, resumeSignal, stopSignal, statusQuery } from "./stream.js";
export { maintainWorkflow } from "./maintain.js";
