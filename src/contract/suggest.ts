/** "Did you mean …?" for misspelt keys, rule kinds, types and field names. */

/** Optimal-string-alignment distance: Levenshtein plus adjacent transpositions (`nmae` → `name`). */
export function editDistance(a: string, b: string): number {
  const n = a.length;
  const m = b.length;
  if (n === 0) return m;
  if (m === 0) return n;
  let prev2: number[] = [];
  let prev: number[] = Array.from({ length: m + 1 }, (_, j) => j);
  for (let i = 1; i <= n; i++) {
    const cur: number[] = [i];
    for (let j = 1; j <= m; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min((prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        v = Math.min(v, (prev2[j - 2] ?? 0) + 1);
      }
      cur.push(v);
    }
    prev2 = prev;
    prev = cur;
  }
  return prev[m] ?? Math.max(n, m);
}

/** Spelling-insensitive form: `primaryKey`, `Primary-Key` and `primary_key` all compare equal. */
function squash(s: string): string {
  return s.toLowerCase().replace(/[_\-\s]/g, "");
}

/**
 * The closest candidate to `word`, or undefined when nothing is close enough to be a plausible typo.
 * Case and `_`/`-` differences count as exact matches, so camelCase spellings of snake_case keys are found.
 */
export function didYouMean(word: string, candidates: Iterable<string>): string | undefined {
  const w = word.toLowerCase();
  const ws = squash(word);
  let best: string | undefined;
  let bestScore = Number.POSITIVE_INFINITY;
  for (const c of candidates) {
    if (c === word) continue;
    if (squash(c) === ws) return c;
    const d = Math.min(editDistance(w, c.toLowerCase()), editDistance(ws, squash(c)));
    const limit = w.length <= 3 ? 1 : w.length <= 5 ? 1 : w.length <= 8 ? 2 : 3;
    if (d <= limit && d < bestScore) {
      best = c;
      bestScore = d;
    }
  }
  return best;
}

/** ` (did you mean x?)`-style suffix, empty when there is no suggestion. */
export function suggestionSuffix(word: string, candidates: Iterable<string>): string {
  const s = didYouMean(word, candidates);
  return s === undefined ? "" : `; did you mean ${s}?`;
}
