import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { REDACTED, Redactor, toTapeValue } from '../../src/recorder';
import { verifyTape } from '../../src/recorder/tape';
import { activityInfo, RUN, recorder, response, tempDir } from './helpers';

const OPENAI_KEY = 'sk-proj-FAKEkey0123456789abcdef';
const ANTHROPIC_KEY = 'sk-ant-api03-FAKEkeyABCDEFGH987654';
const ENV_TOKEN = 'envtoken-7f3a9c1e5b2d';
const CUSTOM = 'corp_secret_42424242';

describe('secrets never reach a tape', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  it('redacts key patterns, secret-named env values, configured secrets and secret-named fields', () => {
    const r = new Redactor({
      env: { MY_SERVICE_TOKEN: ENV_TOKEN, PATH: '/usr/bin:/bin', SHORT_TOKEN: 'abc' },
      secrets: ['local', 'configured-key-123456'],
      patterns: [/corp_secret_\d+/],
    });
    const value = toTapeValue(
      {
        prompt: `use ${OPENAI_KEY} or ${ANTHROPIC_KEY}; token ${ENV_TOKEN}; ${CUSTOM}; configured-key-123456`,
        headers: { Authorization: 'Bearer abc.def.ghi.jkl', 'x-api-key': 'anything', 'content-type': 'json' },
        nested: [{ apiKey: 12345, client_secret: 'x' }],
        path: '/usr/bin:/bin',
        local: 'local model server',
      },
      r,
    ) as Record<string, unknown>;
    const text = JSON.stringify(value);
    for (const secret of [
      OPENAI_KEY,
      ANTHROPIC_KEY,
      ENV_TOKEN,
      CUSTOM,
      'configured-key-123456',
      'abc.def.ghi',
    ])
      expect(text).not.toContain(secret);
    expect(value.headers).toEqual({ Authorization: REDACTED, 'x-api-key': REDACTED, 'content-type': 'json' });
    expect(value.nested).toEqual([{ apiKey: REDACTED, client_secret: REDACTED }]);
    // Not secrets: a non-secret env value, a too-short "secret", and a too-short configured key.
    expect(value.path).toBe('/usr/bin:/bin');
    expect(value.local).toBe('local model server');
  });

  it('keeps every fake key out of the raw tape bytes of a recorded step', async () => {
    const t = tempDir();
    cleanups.push(t.cleanup);
    process.env.JBX_TEST_FAKE_API_KEY = ENV_TOKEN;
    cleanups.push(() => delete process.env.JBX_TEST_FAKE_API_KEY);
    const rec = recorder(t.dir, { redaction: { secrets: ['worker-configured-secret-1'] } });
    const request = {
      provider: 'openai' as const,
      model: 'gpt-4o-mini',
      system: `Your key is ${OPENAI_KEY}`,
      messages: [{ role: 'user' as const, content: `Call the API with ${ANTHROPIC_KEY} and ${ENV_TOKEN}` }],
    };
    const llm = rec.forActivity(activityInfo('1'), 0);
    llm.start({ step: 0, request, headers: { authorization: `Bearer ${OPENAI_KEY}` } }, []);
    await llm.llmRequest(request);
    llm.llmChunk({ index: 0, offsetMs: 1, text: `echo ${OPENAI_KEY}`, raw: {} });
    llm.llmChunk({ index: 1, offsetMs: 2, raw: { delta: { arguments: `{"key":"${ANTHROPIC_KEY}"}` } } });
    llm.llmResponse(response(`here: ${ENV_TOKEN}`));
    await llm.complete(response(`here: ${ENV_TOKEN}`));

    const tool = rec.forActivity(activityInfo('2', 1, 'toolStep'), 1);
    const args = { url: 'https://api.example.com', api_key: 'worker-configured-secret-1', note: OPENAI_KEY };
    tool.start({ step: 1, name: 'fetch', args }, []);
    await tool.toolCall('fetch', args);
    tool.toolError(new Error(`401 for key ${ANTHROPIC_KEY}`));
    await tool.fail(new Error(`401 for key ${ANTHROPIC_KEY}`), { willRetry: false, nonRetryable: true });
    await rec.close();

    const file = rec.store.pathFor(RUN.workflowId, RUN.runId);
    expect(verifyTape(file).ok).toBe(true);
    const raw = readFileSync(file).toString('latin1');
    for (const secret of [OPENAI_KEY, ANTHROPIC_KEY, ENV_TOKEN, 'worker-configured-secret-1', 'FAKEkey'])
      expect(raw).not.toContain(secret);
    expect(raw).toContain(REDACTED);
  });
});
