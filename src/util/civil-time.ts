/**
 * Proleptic Gregorian calendar arithmetic without Date (no time zone, no year 0-99 quirks), and
 * the parser for the one timestamp spelling nearly every row has (Date#toISOString), shared by
 * the engines' JavaScript pass and the lake writer.
 */

/** Days from 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
export function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

function daysInMonth(y: number, m: number): number {
  if (m === 2) return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28;
  return m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31;
}

export function validYmd(y: number, m: number, d: number): boolean {
  return m >= 1 && m <= 12 && d >= 1 && d <= daysInMonth(y, m);
}

/** Non-negative integer of `len` digits at `from`, or -1. */
export function digits(s: string, from: number, len: number): number {
  let v = 0;
  for (let i = from; i < from + len; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v;
}

/**
 * Microseconds of "YYYY-MM-DDTHH:MM:SS.mmmZ" (Date#toISOString) or the same with 6 fractional
 * digits — the engine's canonical timestamps — parsed without a regex because every row of a
 * batch has one. Undefined when not in that form or beyond 2^53 µs (the regex path is exact).
 */
export function canonicalIsoMicrosNumber(v: string): number | undefined {
  const len = v.length;
  if ((len !== 24 && len !== 27) || v.charCodeAt(len - 1) !== 90 /* Z */ || v.charCodeAt(10) !== 84 /* T */) return undefined;
  if (v.charCodeAt(4) !== 45 || v.charCodeAt(7) !== 45 || v.charCodeAt(13) !== 58 || v.charCodeAt(16) !== 58 || v.charCodeAt(19) !== 46) {
    return undefined;
  }
  const y = digits(v, 0, 4);
  const mo = digits(v, 5, 2);
  const d = digits(v, 8, 2);
  const h = digits(v, 11, 2);
  const mi = digits(v, 14, 2);
  const s = digits(v, 17, 2);
  const frac = digits(v, 20, len - 21);
  if (y < 0 || mo < 0 || d < 0 || h < 0 || mi < 0 || s < 0 || frac < 0) return undefined;
  if (!validYmd(y, mo, d) || h > 23 || mi > 59 || s > 59) return undefined;
  const seconds = daysFromCivil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s;
  const micros = seconds * 1_000_000 + (len === 24 ? frac * 1000 : frac);
  return Number.isSafeInteger(micros) ? micros : undefined;
}
