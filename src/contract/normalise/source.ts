/** The `source` section: kept as written for the connector registry, which needs only its `type` here. */
import type { Contract } from "../types.js";
import type { NormaliseContext } from "./context.js";
import { asMap, asNonEmptyStr, missing, type Obj } from "./read.js";

export function readSource(cx: NormaliseContext, data: Obj): Contract["source"] {
  const m = asMap(cx, data["source"], ["source"]);
  if (!m) return undefined;
  if (m["type"] === undefined) {
    missing(cx, m, ["source"], "type", "the source type, e.g. kafka, sse, sqs, table");
    return undefined;
  }
  const type = asNonEmptyStr(cx, m["type"], ["source", "type"], "the source type, e.g. kafka, sse, sqs, table");
  if (type === undefined) return undefined;
  return { ...m, type };
}
