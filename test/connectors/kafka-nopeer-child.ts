/**
 * Runs the Kafka source in a process where `kafkajs` cannot be resolved (a module hook hides it,
 * as if the optional peer were not installed) and prints the error the user would see.
 */
import { register } from "node:module";

const hook = `export async function resolve(specifier, context, next) {
  if (specifier === "kafkajs") {
    const err = new Error("Cannot find package 'kafkajs'");
    err.code = "ERR_MODULE_NOT_FOUND";
    throw err;
  }
  return next(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hook)}`);

const { KafkaOffsetSource } = await import("../../src/sources/kafka/source.js");
const source = new KafkaOffsetSource("orders", { brokers: "127.0.0.1:1", groupId: "g" });
try {
  await source.endCursor();
  process.stdout.write("no error\n");
} catch (err) {
  const e = err as { name?: string; code?: string; message?: string };
  process.stdout.write(`${JSON.stringify({ name: e.name, code: e.code, message: e.message })}\n`);
}
