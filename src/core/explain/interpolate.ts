// Reading a micro-benchmark curve at a size it did not measure exactly.

export interface CurveReading {
  value: number;
  /** inside: between two measured points (or on one); below/above: outside the measured range. */
  where: 'exact' | 'inside' | 'below' | 'above';
}

/**
 * All-reduce time at `size` bytes from measured (size, time) points: log-log interpolation between
 * the two sizes around it (time grows as a power of size between them). Below the smallest size the
 * smallest size's time holds (small all-reduces are latency-bound, so time stops shrinking); above the
 * largest, time grows with size at the largest size's bandwidth.
 */
export function readSizeCurve(points: { x: number; y: number }[], x: number): CurveReading | undefined {
  const pts = points.filter((p) => p.x > 0 && p.y > 0).sort((a, b) => a.x - b.x);
  if (!pts.length) return undefined;
  const exact = pts.find((p) => p.x === x);
  if (exact) return { value: exact.y, where: 'exact' };
  if (x < pts[0].x) return { value: pts[0].y, where: 'below' };
  const last = pts[pts.length - 1];
  if (x > last.x) return { value: (last.y * x) / last.x, where: 'above' };
  const i = pts.findIndex((p) => p.x > x);
  const a = pts[i - 1];
  const b = pts[i];
  const t = Math.log(x / a.x) / Math.log(b.x / a.x);
  return { value: Math.exp(Math.log(a.y) + t * Math.log(b.y / a.y)), where: 'inside' };
}

/**
 * GEMM time at M rows from measured (M, time) points: linear between the two M around it. Outside the
 * range the nearest point holds: decode GEMMs at small M are memory-bound (they read the whole weight
 * whatever M is), so the nearest measured M is the better guess than a straight line.
 */
export function readLinearCurve(points: { x: number; y: number }[], x: number): CurveReading | undefined {
  const pts = points.filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y)).sort((a, b) => a.x - b.x);
  if (!pts.length) return undefined;
  const exact = pts.find((p) => p.x === x);
  if (exact) return { value: exact.y, where: 'exact' };
  if (x < pts[0].x) return { value: pts[0].y, where: 'below' };
  const last = pts[pts.length - 1];
  if (x > last.x) return { value: last.y, where: 'above' };
  const i = pts.findIndex((p) => p.x > x);
  const a = pts[i - 1];
  const b = pts[i];
  return { value: a.y + ((x - a.x) / (b.x - a.x)) * (b.y - a.y), where: 'inside' };
}
