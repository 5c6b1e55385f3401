/** Deterministic similarity math, safe inside the workflow sandbox (no I/O, no randomness). */

/**
 * Cosine of `target` with each of `others` (sparse TF vectors) after weighting by IDF over `docs` (the track's
 * window plus the new message). Document frequencies are counted once for all pairs.
 */
export function tfidfCosines(
  target: Record<string, number>,
  others: readonly Record<string, number>[],
  docs: readonly Record<string, number>[],
): number[] {
  const df = new Map<string, number>();
  for (const d of docs) for (const t in d) df.set(t, (df.get(t) ?? 0) + 1);
  const n = docs.length;
  const idf = (t: string) => Math.log((1 + n) / (1 + (df.get(t) ?? 0))) + 1;
  const norm = (v: Record<string, number>) => {
    let sum = 0;
    for (const t in v) {
      const w = v[t]! * idf(t);
      sum += w * w;
    }
    return Math.sqrt(sum);
  };
  const targetNorm = norm(target);
  return others.map((o) => {
    let dot = 0;
    for (const t in target) {
      const c = o[t];
      if (c !== undefined) {
        const w = idf(t);
        dot += target[t]! * w * c * w;
      }
    }
    const on = norm(o);
    return targetNorm && on ? dot / (targetNorm * on) : 0;
  });
}

export function denseCosine(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length) return 0;
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}

/** Jaccard index of two sorted arrays of unique numbers. */
export function sortedJaccard(a: readonly number[], b: readonly number[]): number {
  if (!a.length && !b.length) return 1;
  let i = 0;
  let j = 0;
  let both = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      both++;
      i++;
      j++;
    } else if (a[i]! < b[j]!) i++;
    else j++;
  }
  return both / (a.length + b.length - both);
}
