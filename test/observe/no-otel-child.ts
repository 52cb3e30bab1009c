/**
 * Runs a stream in a process where no `@opentelemetry/*` package can be resolved (a module hook
 * hides them, as if the optional peers were not installed), then asks for OTLP export, and prints
 * what happened as one JSON line.
 */
import { register } from "node:module";

const hook = `export async function resolve(specifier, context, next) {
  if (specifier.startsWith("@opentelemetry/")) {
    const err = new Error("Cannot find package '" + specifier + "'");
    err.code = "ERR_MODULE_NOT_FOUND";
    throw err;
  }
  return next(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hook)}`);

const contract = process.argv[2]!;
const target = process.argv[3]!;
const { StreamSink } = await import("../../src/sink/index.js");
const { setupOtlpTracing } = await import("../../src/observe/trace.js");
const records = Array.from({ length: 5 }, (_, i) => ({ order_id: i, customer_id: "c", amount: 1, currency: "EUR", status: "new" }));
const summary = await new StreamSink(contract, records, { checkpoint: "memory", targetPath: target }).run("available_now");
let otlp: { name?: string; message?: string } = {};
try {
  await setupOtlpTracing({ endpoint: "http://127.0.0.1:1" });
} catch (err) {
  otlp = { name: (err as Error).name, message: (err as Error).message };
}
process.stdout.write(`${JSON.stringify({ sourceCount: summary.sourceCount, otlp })}\n`);
