/**
 * How the benchmark suites set the circuit breaker, and the sentence each prints beside its rows (bench/run.ts
 * and bench/RESULTS.md), so a reader knows what guarded the runs measured.
 */

/**
 * For suites that run the sample agents against the scripted model server: every detector at its default except
 * spend velocity. The scripted model answers over loopback in a few milliseconds a step, faster than any hosted
 * model streams, so at its default (300,000 output tokens or $5 a minute) a healthy run would read as a runaway
 * one. Velocity stays on with a ceiling nothing reaches, so its per-step work is still part of each step.
 */
export const SCRIPTED_MODEL_BREAKER = {
  velocity: { maxOutputTokensPerMinute: 1e9, maxUsdPerMinute: 1e9 },
} as const;

export const SCRIPTED_MODEL_BREAKER_NOTE =
  'on, every detector at its default except spend velocity, whose ceilings are raised to 1e9 output tokens and $1e9 a minute: the scripted model answers over loopback in milliseconds a step, faster than any hosted model streams, so its default would stop a healthy run (its per-step work is still measured)';

export const NO_AGENT_NOTE = 'not involved: this suite runs no agent';
