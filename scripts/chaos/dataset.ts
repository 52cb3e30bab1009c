/**
 * The known stream every chaos cell consumes: keyed events for a `merge` contract, some keys
 * updated twice (once right after the first version, so inside one batch — superseded — and once
 * far later, so in another batch — a merge update), and poison records of several kinds mixed
 * in. Every event carries a unique `tag` (`e<seq>`), so each good row and each quarantine row
 * can be traced to exactly one produced event.
 */

/** The contract of every chaos stream; written next to the lake of each cell. */
export const CHAOS_CONTRACT = `version: "1.0"
dataset: chaos
primary_key: [id]
model:
  fields:
    - { name: seq, type: long, required: true }
    - { name: id, type: long }
    - { name: version, type: integer, required: true }
    - { name: status, type: string, required: true }
    - { name: amount, type: double, required: true }
    - { name: email, type: string }
    - { name: tag, type: string, required: true }
quality:
  row_rules:
    - accepted_values: { field: status, values: [new, paid, shipped] }
    - regex_match: { field: email, pattern: "^[^@]+@[^@]+\\\\.[a-z]+$" }
    - range: { field: amount, min: 0, inclusive: false }
materialization:
  strategy: merge
  format: duckdb
quarantine:
  enabled: true
  include_error_reason: true
schema_policy:
  unknown_fields: quarantine
`;

export interface ChaosEvent {
  seq: number;
  id: number | null;
  version: number;
  status: string;
  amount: number | string;
  email: string;
  tag: string;
  [extra: string]: unknown;
}

/** One produced item: an event, or (for text sources) a line that is not JSON at all. */
export type Produced = { kind: "event"; event: ChaosEvent; poison: boolean } | { kind: "garbage"; seq: number; tag: string; text: string };

/** Poison kinds every source can carry, and those only a text payload can. */
const TYPED_POISON = ["negative-amount", "bad-status", "bad-email", "null-key"] as const;
const TEXT_POISON = ["not-json", "type-error", "unknown-field"] as const;
export type PoisonKind = (typeof TYPED_POISON)[number] | (typeof TEXT_POISON)[number];

export interface Dataset {
  items: Produced[];
  /** id → the tag of its last good event (what the merge target must hold). */
  lastGood: Map<number, { tag: string; version: number }>;
  /** id → the tags of all its good events (an unordered queue may end on any of them). */
  goodTags: Map<number, Set<string>>;
  /** Tags of the poison items: exactly what quarantine must hold. */
  poisonTags: Set<string>;
  /** Good events produced: each is either written (goodCount) or superseded in its batch. */
  goodEvents: number;
  poisonByKind: Record<string, number>;
}

const STATUSES = ["new", "paid", "shipped"];

function goodEvent(seq: number, id: number, version: number): ChaosEvent {
  return {
    seq,
    id,
    version,
    status: STATUSES[(id + version) % STATUSES.length]!,
    amount: ((id * 37 + version * 11) % 10_000) / 100 + 0.01,
    email: `u${id}@example.com`,
    tag: `e${seq}`,
  };
}

function poisonEvent(seq: number, id: number, kind: PoisonKind): ChaosEvent | string {
  const e = goodEvent(seq, id, 1);
  switch (kind) {
    case "negative-amount":
      return { ...e, amount: -5 };
    case "bad-status":
      return { ...e, status: "lost" };
    case "bad-email":
      return { ...e, email: "not-an-email" };
    case "null-key":
      return { ...e, id: null };
    case "type-error":
      return { ...e, amount: "twelve" };
    case "unknown-field":
      return { ...e, surprise: true };
    case "not-json":
      return `{not json ${e.tag}`;
  }
}

/**
 * `keys` distinct keys; every 7th key gets a second version right behind its first, every 11th
 * a later version ~`lateGap` events further on; every 23rd item is poison (cycling kinds).
 * `text`: the source carries raw text (file, Kafka, queues, SSE), so decode and type poison too.
 */
export function makeDataset(keys: number, text: boolean, lateGap = 250): Dataset {
  const kinds: readonly PoisonKind[] = text ? [...TYPED_POISON, ...TEXT_POISON] : TYPED_POISON;
  const items: Produced[] = [];
  const lastGood = new Map<number, { tag: string; version: number }>();
  const goodTags = new Map<number, Set<string>>();
  const poisonTags = new Set<string>();
  const poisonByKind: Record<string, number> = {};
  const versions = new Map<number, number>();
  let goodEvents = 0;
  let poisonIds = 10_000_000;
  const push = (id: number) => {
    const version = (versions.get(id) ?? 0) + 1;
    versions.set(id, version);
    const event = goodEvent(items.length + 1, id, version);
    items.push({ kind: "event", event, poison: false });
    lastGood.set(id, { tag: event.tag, version });
    goodTags.set(id, (goodTags.get(id) ?? new Set()).add(event.tag));
    goodEvents++;
  };
  for (let k = 0; k < keys; k++) {
    push(k);
    if (k % 7 === 3) push(k);
    if (k >= lateGap && (k - lateGap) % 11 === 0) push(k - lateGap);
    if (k % 23 === 11) {
      const seq = items.length + 1;
      const kind = kinds[Math.floor(k / 23) % kinds.length]!;
      const p = poisonEvent(seq, poisonIds++, kind);
      poisonTags.add(`e${seq}`);
      poisonByKind[kind] = (poisonByKind[kind] ?? 0) + 1;
      items.push(typeof p === "string" ? { kind: "garbage", seq, tag: `e${seq}`, text: p } : { kind: "event", event: p, poison: true });
    }
  }
  return { items, lastGood, goodTags, poisonTags, goodEvents, poisonByKind };
}

/**
 * Keys travel as 64-bit ids beyond 2^53 (`BIG_ID_BASE + id`): ids one apart that a lossy parse
 * would make one value, so a rounding anywhere shows as lost and duplicated keys in the audit.
 */
export const BIG_ID_BASE = 2n ** 53n;

/** The id a source carries for key `id`, as its digits. */
export const bigIdText = (id: number): string => (BIG_ID_BASE + BigInt(id)).toString();

/** The key of a stored id (a bigint, number or string read back from the lake). */
export const keyOfStoredId = (stored: unknown): number => Number(BigInt(stored as string | number | bigint) - BIG_ID_BASE);

/** The payload of an item as a text source carries it. */
export function itemText(item: Produced): string {
  if (item.kind === "garbage") return item.text;
  const { id } = item.event;
  if (id === null) return JSON.stringify(item.event);
  return JSON.stringify({ ...item.event, id: "\u0000id" }).replace('"\\u0000id"', bigIdText(id));
}
