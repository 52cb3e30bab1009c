export { streamWorkflow, pauseSignal, resumeSignal, stopSignal, statusQuery } from "./stream.js";
