import { describe, expect, it } from 'vitest';
import { BreakerConfigError, LoopBreaker, resolveBreakerConfig, type StepSpend } from '../../src/breaker';
import { resolveAgentBreakerConfig } from '../../src/breaker/config';
import { PriceBook } from '../../src/llm/pricing';
import { DEFAULT_PRICE_TABLE } from '../../src/llm/pricing/priceTable';

const book = new PriceBook(DEFAULT_PRICE_TABLE);

/**
 * A healthy tool loop on the fastest hosted models: 100 steps of half a second each (a quarter second to the
 * first token, 400 output tokens at 3,000 tokens a second, a tenth of a second of tool), its conversation
 * resent every step and growing 1,200 tokens a step from 4,000, priced as gpt-4.1-mini.
 */
function healthyFastRun(): { step: StepSpend; inputTokens: number }[] {
  return Array.from({ length: 100 }, (_, k) => {
    const usage = { inputTokens: 4_000 + 1_200 * k, outputTokens: 400 };
    return {
      inputTokens: usage.inputTokens,
      step: {
        startMs: k * 500,
        endMs: (k + 1) * 500,
        outputTokens: usage.outputTokens,
        usd: book.costOf({ provider: 'openai', model: 'gpt-4.1-mini', usage }),
      },
    };
  });
}

describe('spend velocity on a single agent', () => {
  it('lets a healthy run on the fastest hosted models through: $3.12/min and 48,000 output tokens/min under $5 and 300,000', () => {
    const config = resolveAgentBreakerConfig(undefined);
    expect(config.velocity).toEqual({
      windowMs: 60_000,
      maxOutputTokensPerMinute: 300_000,
      maxUsdPerMinute: 5,
      minSteps: 4,
    });
    // The cap is the single-agent default's; this run spends $2.60 of it.
    const breaker = new LoopBreaker({ ...config, capUsd: 10 });
    const run = healthyFastRun();
    const trips = run.map(({ step }) => breaker.observeSpend('agent', step)).filter(Boolean);
    expect(trips).toEqual([]);

    // What the detector measured at the last step (the whole run is inside its window; both rates peak there).
    const usd = run.reduce((n, r) => n + r.step.usd, 0);
    expect(usd).toBeCloseTo(2.6, 10);
    expect(usd / (50_000 / 60_000)).toBeCloseTo(3.12, 10);
    expect((400 * 100) / (50_000 / 60_000)).toBe(48_000);
    // The same run counted as every token a second, as the detector did before: 127,600/s, far over its 25,000.
    const allTokens = run.reduce((n, r) => n + r.inputTokens + r.step.outputTokens, 0);
    expect(allTokens / 50).toBe(127_600);
  });

  it('trips on a track generating faster than any one hosted stream: eight streams at once', () => {
    const breaker = new LoopBreaker(resolveAgentBreakerConfig(undefined));
    // Eight concurrent generations of 400 tokens every half second: 384,000 output tokens a minute.
    let trip: ReturnType<LoopBreaker['observeSpend']>;
    for (let k = 0; k < 8 && !trip; k++)
      trip = breaker.observeSpend('agent', {
        startMs: k * 500,
        endMs: (k + 1) * 500,
        outputTokens: 8 * 400,
        usd: 0.001,
      });
    expect(trip?.detector).toBe('spend-velocity');
    // At the 4th step (minSteps): 12,800 tokens in 2 s.
    expect(trip?.reason).toBe('384000 output tokens/min, over 300000 across the last 4 steps (2.0 s)');
  });

  it('trips on dollars a minute past $5: a 150,000-token context resent every 6 s on claude-opus-4-1', () => {
    const breaker = new LoopBreaker({ ...resolveAgentBreakerConfig(undefined), capUsd: 100 });
    const usd = book.costOf({
      provider: 'anthropic',
      model: 'claude-opus-4-1',
      usage: { inputTokens: 150_000, outputTokens: 300 },
    });
    expect(usd).toBeCloseTo(2.2725, 10);
    const trips = [0, 1, 2, 3].map((k) =>
      breaker.observeSpend('agent', { startMs: k * 6000, endMs: (k + 1) * 6000, outputTokens: 300, usd }),
    );
    expect(trips.slice(0, 3)).toEqual([undefined, undefined, undefined]);
    expect(trips[3]?.reason).toBe('$22.7250/min, over 5 across the last 4 steps (24.0 s)');
  });

  it('refuses the old all-tokens-a-second setting, saying what replaced it', () => {
    const err = (() => {
      try {
        resolveBreakerConfig({ capUsd: 1, velocity: { maxTokensPerSecond: 1 } as never });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(BreakerConfigError);
    expect((err as BreakerConfigError).field).toBe('velocity.maxTokensPerSecond');
    expect((err as Error).message).toBe(
      'Breaker configuration velocity.maxTokensPerSecond is no longer read: velocity counts output tokens a minute (velocity.maxOutputTokensPerMinute), not every token a second, since the prompt a growing chat resends is not spend rate. Fix it before starting the run: the breaker never falls back to "unlimited".',
    );
  });
});
