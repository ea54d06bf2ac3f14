// When is a difference between two runs more than noise?
//
// Serving metrics: each run reports a statistic (mean, median or a percentile) of n samples and
// their standard deviation, so its sampling error is known:
//   mean:        SE = sd / sqrt(n)
//   percentile p: SE = sd * sqrt(p(1-p)/n) / phi(z_p)   (asymptotic SE of a sample quantile, taking the
//                samples as roughly normal; p = 0.5 gives the median's 1.2533 sd / sqrt(n))
// with n the independent samples: requests (later tokens for ITL) divided by the concurrency, since
// requests in flight together share their steps and vary together (counting them as independent
// flagged TTFT in 1.3% of same-server comparisons instead of 0.3%: bench/compare-noise.ts);
// and the difference of two independent runs has SE_d = sqrt(SE_a^2 + SE_b^2). A difference is flagged
// when it exceeds 3 SE_d (a false alarm about 0.3% of the time for each metric) and also 1% of the
// baseline, because a sub-percent change moves no decision even when a very steady server (or the
// simulator, whose spread is near zero) makes it statistically real.
// Throughput has no spread of its own in the file; a closed-loop run's throughput is inversely
// proportional to its mean request latency, so it inherits that mean's relative SE (E2EL where
// reported, else TPOT, which dominates E2EL for decode-heavy work). With no spread at all the
// threshold falls back to 3%.

export const RELATIVE_FLOOR = 0.01;
export const NO_SPREAD_FLOOR = 0.03;
export const SIGMAS = 3;

/** Standard normal density. */
function phi(z: number): number {
  return Math.exp(-0.5 * z * z) / Math.sqrt(2 * Math.PI);
}

/** Standard normal quantile (Abramowitz & Stegun 26.2.23, error below 4.5e-4). */
export function normalQuantile(p: number): number {
  if (p <= 0 || p >= 1) throw new RangeError(`quantile of ${p}`);
  if (p < 0.5) return -normalQuantile(1 - p);
  const t = Math.sqrt(-2 * Math.log(1 - p));
  return t - (2.515517 + 0.802853 * t + 0.010328 * t * t) / (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t);
}

/** Standard error of a statistic of n samples with standard deviation sd: "mean", "median" or a quantile 0..1. */
export function standardError(statistic: 'mean' | 'median' | number, sd: number, n: number): number {
  if (!(n > 0)) return Number.NaN;
  if (statistic === 'mean') return sd / Math.sqrt(n);
  const p = statistic === 'median' ? 0.5 : statistic;
  return (sd * Math.sqrt((p * (1 - p)) / n)) / phi(normalQuantile(p));
}

export interface Verdict {
  delta: number;
  relative: number;
  /** The absolute size a difference must exceed to be flagged. */
  threshold: number;
  flagged: boolean;
  /** How the threshold was set, for the table's note. */
  basis: '3 SE' | '1% floor' | 'no spread: 3%' | 'fixed';
}

/** Judges b against a, given each value's standard error (NaN or undefined when unknown). */
export function judge(a: number, b: number, seA?: number, seB?: number): Verdict {
  const delta = b - a;
  const relative = a !== 0 ? delta / Math.abs(a) : Number.POSITIVE_INFINITY;
  const known = seA !== undefined && seB !== undefined && Number.isFinite(seA) && Number.isFinite(seB);
  let threshold: number;
  let basis: Verdict['basis'];
  if (known) {
    const stat = SIGMAS * Math.sqrt(seA * seA + seB * seB);
    const floor = RELATIVE_FLOOR * Math.abs(a);
    threshold = Math.max(stat, floor);
    basis = stat >= floor ? '3 SE' : '1% floor';
  } else {
    threshold = NO_SPREAD_FLOOR * Math.abs(a);
    basis = 'no spread: 3%';
  }
  return { delta, relative, threshold, flagged: Math.abs(delta) > threshold, basis };
}

/** A fixed rule: flagged when the change exceeds both `relative` of a and `absolute`. */
export function judgeFixed(a: number, b: number, relative: number, absolute: number): Verdict {
  const delta = b - a;
  const threshold = Math.max(relative * Math.abs(a), absolute);
  return { delta, relative: a !== 0 ? delta / Math.abs(a) : Number.POSITIVE_INFINITY, threshold, flagged: Math.abs(delta) > threshold, basis: 'fixed' };
}
