/**
 * Dollars as a person reads them: four decimals from a cent up, four significant digits below a cent, never the
 * binary-float tail a sum of prices carries (0.000013649999999999998 prints as 0.00001365) and never an exponent.
 * Every place that prints a cost uses this, so a tape, a diff and a breaker message agree on the same figure.
 */
export function formatUsd(usd: number): string {
  if (!Number.isFinite(usd)) return String(usd);
  if (usd === 0) return '0.0000';
  const abs = Math.abs(usd);
  if (abs >= 0.01) return usd.toFixed(4);
  // Four significant digits: the first one sits -floor(log10(abs)) places after the point.
  const decimals = Math.min(20, 3 - Math.floor(Math.log10(abs)));
  return usd.toFixed(decimals).replace(/(\.\d*?[1-9])0+$/, '$1');
}
