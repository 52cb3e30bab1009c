import { canonicalIsoMicrosNumber, daysFromCivil, digits, validYmd } from "../util/civil-time.js";

const DATE_RE = /^(-?\d{4,6})-(\d{2})-(\d{2})$/;
// Date, optional time with up to 9 fractional digits, optional Z or ±hh[:mm] offset.
const TS_RE = /^(-?\d{4,6})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;

export function toEpochDays(v: unknown): number | undefined {
  if (typeof v === "string") {
    // Fast path for the canonical "YYYY-MM-DD".
    if (v.length === 10 && v.charCodeAt(4) === 45 && v.charCodeAt(7) === 45) {
      const y = digits(v, 0, 4);
      const mo = digits(v, 5, 2);
      const d = digits(v, 8, 2);
      if (y >= 0 && mo >= 0 && d >= 0) return validYmd(y, mo, d) ? daysFromCivil(y, mo, d) : undefined;
    }
    const m = DATE_RE.exec(v);
    if (m) {
      const y = Number(m[1]);
      const mo = Number(m[2]);
      const d = Number(m[3]);
      return validYmd(y, mo, d) ? daysFromCivil(y, mo, d) : undefined;
    }
    const micros = toEpochMicros(v);
    return micros === undefined ? undefined : Number(floorDiv(micros, 86_400_000_000n));
  }
  if (v instanceof Date) {
    const t = v.getTime();
    return Number.isNaN(t) ? undefined : Math.floor(t / 86_400_000);
  }
  return undefined;
}

export function toEpochMicros(v: unknown): bigint | undefined {
  if (v instanceof Date) {
    const t = v.getTime();
    return Number.isNaN(t) ? undefined : BigInt(t) * 1000n;
  }
  if (typeof v !== "string") return undefined;
  const fast = canonicalIsoMicrosNumber(v);
  if (fast !== undefined) return BigInt(fast);
  // No Date.parse fallback: it reads non-ISO strings in the machine's local time zone.
  const m = TS_RE.exec(v);
  if (!m) return undefined;
  const y = Number(m[1]);
  const mo = Number(m[2]);
  const d = Number(m[3]);
  const h = m[4] === undefined ? 0 : Number(m[4]);
  const mi = m[5] === undefined ? 0 : Number(m[5]);
  const s = m[6] === undefined ? 0 : Number(m[6]);
  if (!validYmd(y, mo, d) || h > 23 || mi > 59 || s > 59) return undefined;
  const frac = m[7] === undefined ? 0 : Math.floor(Number(m[7].padEnd(9, "0")) / 1000);
  let offsetMin = 0;
  const tz = m[8];
  if (tz !== undefined && tz !== "Z" && tz !== "z") {
    const sign = tz[0] === "-" ? -1 : 1;
    const digits = tz.slice(1).replace(":", "");
    offsetMin = sign * (Number(digits.slice(0, 2)) * 60 + (digits.length > 2 ? Number(digits.slice(2, 4)) : 0));
  }
  const seconds = daysFromCivil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offsetMin * 60;
  return BigInt(seconds) * 1_000_000n + BigInt(frac);
}

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
}
