import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ChatCompletion } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  loadModelScript,
  type ModelScript,
  ModelScriptInvalidError,
  ModelScriptUnreadableError,
  type ModelServer,
  startModelServer,
} from '../../../src/testing/modelserver';
import { jsonOf } from './clients';

const dir = mkdtempSync(path.join(os.tmpdir(), 'jbx-modelscript-'));
const file = (name: string, text: string) => {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  return p;
};
const invalid = (script: unknown) => {
  try {
    loadModelScript(script as ModelScript);
  } catch (err) {
    expect(err).toBeInstanceOf(ModelScriptInvalidError);
    return err as ModelScriptInvalidError;
  }
  throw new Error('expected the script to be rejected');
};

describe('loading a model script', () => {
  it('reads YAML and JSON files', () => {
    const yaml = file(
      'ok.yaml',
      'name: sample\nturns:\n  - id: a\n    match: { lastUser: hi }\n    reply: { text: Hello }\n',
    );
    expect(loadModelScript(yaml)).toEqual({
      name: 'sample',
      turns: [{ id: 'a', match: { lastUser: 'hi' }, reply: { text: 'Hello' } }],
    });
    const json = file(
      'ok.json',
      JSON.stringify({ turns: [{ reply: { toolCalls: [{ name: 't' }] }, repeat: true }] }),
    );
    expect(loadModelScript(json).turns[0]?.repeat).toBe(true);
  });

  it('loads the sample agent script', () => {
    const script = loadModelScript(path.join(__dirname, '../../../examples/sample/script.yaml'));
    expect(script.turns.map((t) => t.id)).toEqual(['look-up-moon', 'look-up-earth', 'divide', 'answer']);
  });

  it('rejects an unknown key, naming the file and the field', () => {
    const p = file('typo.yaml', 'turns:\n  - id: plan\n    reply: { txt: Hello }\n');
    const err = (() => {
      try {
        loadModelScript(p);
      } catch (e) {
        return e as ModelScriptInvalidError;
      }
    })();
    expect(err).toBeInstanceOf(ModelScriptInvalidError);
    expect(err?.code).toBe('MODEL_SCRIPT_INVALID');
    expect(err?.message).toContain(p);
    expect(err?.message).toContain('turns[0] (id "plan").reply.txt is not a known key');
    expect(err?.message).toContain('known: text, toolCalls');
    expect(err?.field).toBe('turns[0] (id "plan").reply.txt');
  });

  it.each([
    [{ turns: [] }, 'turns is empty'],
    [{}, 'turns must be a list of turns'],
    [{ turns: [{}] }, 'turns[0].reply is missing'],
    [{ turns: [{ reply: {} }] }, 'turns[0].reply says nothing'],
    [{ turns: [{ reply: { text: 5 } }] }, 'turns[0].reply.text must be a string (got number 5)'],
    [{ turns: [{ reply: { text: 'a' }, repeat: 'yes' }] }, 'turns[0].repeat must be true or false'],
    [
      { turns: [{ match: { provider: 'gemini' }, reply: { text: 'a' } }] },
      'turns[0].match.provider must be "openai" or "anthropic"',
    ],
    [{ turns: [{ reply: { status: 200 } }] }, 'turns[0].reply.status must be an integer from 400 to 599'],
    [{ turns: [{ reply: { text: 'a', chunkSize: 0 } }] }, 'turns[0].reply.chunkSize must be an integer >= 1'],
    [
      { turns: [{ reply: { text: 'a', firstChunkDelayMs: -1 } }] },
      'turns[0].reply.firstChunkDelayMs must be a number from 0 to 600000 (got number -1)',
    ],
    [
      { turns: [{ reply: { text: 'a', firstChunkDelayMs: 600_001 } }] },
      'turns[0].reply.firstChunkDelayMs must be a number from 0 to 600000',
    ],
    [
      { turns: [{ reply: { text: 'a', firstChunkDelayMs: '90s' } }] },
      'turns[0].reply.firstChunkDelayMs must be a number from 0 to 600000 (got the string "90s")',
    ],
    [
      { turns: [{ reply: { text: 'a', usage: { input: -1 } } }] },
      'turns[0].reply.usage.input must be an integer >= 0',
    ],
    [{ turns: [{ reply: { toolCalls: [] } }] }, 'turns[0].reply.toolCalls must be a non-empty list'],
    [
      { turns: [{ reply: { toolCalls: [{ name: 'x', arguments: 'city=Paris' }] } }] },
      'toolCalls[0].arguments must be an object',
    ],
    [
      { turns: [{ reply: { toolCalls: [{ arguments: {} }] } }] },
      'toolCalls[0].name must be a non-empty string',
    ],
    [
      {
        turns: [
          { id: 'a', reply: { text: 'a' } },
          { id: 'a', reply: { text: 'b' } },
        ],
      },
      'repeats the id of turns[0]',
    ],
    [{ turns: [{ reply: { text: 'a' } }], extra: 1 }, 'the script.extra is not a known key'],
  ])('rejects %j: %s', (script, expected) => {
    expect(invalid(script).message).toContain(expected);
  });

  it('names the in-memory script when there is no file', () => {
    expect(invalid({ turns: [] }).message).toMatch(/^Model script the in-memory script is invalid/);
  });

  it('reports a YAML syntax error with the file', () => {
    const p = file('broken.yaml', 'turns:\n  - reply: { text: "unclosed\n');
    expect(() => loadModelScript(p)).toThrow(ModelScriptInvalidError);
    expect(() => loadModelScript(p)).toThrow(`Model script ${p} is invalid: the file does not parse`);
  });

  it('reports a missing file as unreadable, with the resolved path', () => {
    const p = path.join(dir, 'missing.yaml');
    expect(() => loadModelScript(p)).toThrow(ModelScriptUnreadableError);
    expect(() => loadModelScript(p)).toThrow(`Cannot read model script ${p}`);
  });

  describe('on a running server', () => {
    let server: ModelServer;
    beforeAll(async () => {
      server = await startModelServer({
        script: { name: 'kept', turns: [{ reply: { text: 'still here' }, repeat: true }] },
      });
    });
    afterAll(() => server.close());

    it('refuses to start with an invalid script', async () => {
      await expect(startModelServer({ script: { turns: [] } })).rejects.toThrow(ModelScriptInvalidError);
    });

    it('keeps serving the old script when loadScript is given a bad one', async () => {
      expect(() => server.loadScript({ turns: [{ reply: { text: 1 } }] } as unknown as ModelScript)).toThrow(
        ModelScriptInvalidError,
      );
      const res = await fetch(`${server.openaiBaseURL}/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect((await jsonOf<ChatCompletion>(res)).choices[0]?.message.content).toBe('still here');
    });
  });
});
