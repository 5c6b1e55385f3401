import { describe, expect, it } from 'vitest';
import { ModelServerPortInUseError, startModelServer } from '../../../src/testing/modelserver';

const script = { turns: [{ reply: { text: 'x' } }] };

describe('starting the model server', () => {
  it('listens on 127.0.0.1 at a free port by default and exposes both base URLs', async () => {
    const server = await startModelServer({ script });
    try {
      expect(server.port).toBeGreaterThan(0);
      expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
      expect(server.openaiBaseURL).toBe(`${server.url}/v1`);
      expect(server.anthropicBaseURL).toBe(server.url);
    } finally {
      await server.close();
    }
  });

  it('fails with a typed error naming the busy port and how to pick another', async () => {
    const first = await startModelServer({ script });
    try {
      const err = await startModelServer({ script, port: first.port }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ModelServerPortInUseError);
      expect((err as ModelServerPortInUseError).code).toBe('MODEL_SERVER_PORT_IN_USE');
      expect((err as Error).message).toContain(`port ${first.port} on 127.0.0.1 is already in use`);
      expect((err as Error).message).toContain('--port N');
      expect((err as Error).message).toContain('port 0');
    } finally {
      await first.close();
    }
  });

  it('closes promptly even while a client holds a keep-alive connection mid-stream', async () => {
    const server = await startModelServer({
      script: { turns: [{ reply: { text: 'slow '.repeat(50), chunkSize: 1, chunkDelayMs: 20 } }] },
    });
    const res = await fetch(`${server.openaiBaseURL}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const reader = res.body!.getReader();
    await reader.read();
    const started = Date.now();
    await server.close();
    // The reply would stream for 5 s (250 chunks, 20 ms apart): close does not wait for it.
    expect(Date.now() - started).toBeLessThan(2_500);
    await expect(reader.read().then(() => reader.read())).rejects.toThrow();
  });

  it('survives a client that goes away mid-stream, as a killed worker does, and serves the next request', async () => {
    const server = await startModelServer({
      script: {
        turns: [
          { id: 'slow', reply: { text: 'tick '.repeat(40), chunkSize: 1, chunkDelayMs: 5 }, repeat: true },
        ],
      },
    });
    try {
      const abort = new AbortController();
      const res = await fetch(`${server.openaiBaseURL}/chat/completions`, {
        method: 'POST',
        signal: abort.signal,
        body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      });
      await res.body!.getReader().read();
      abort.abort();
      const again = await fetch(`${server.openaiBaseURL}/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(again.status).toBe(200);
      expect(server.servedTurns()).toEqual([
        { turnId: 'slow', provider: 'openai', streamed: true },
        { turnId: 'slow', provider: 'openai', streamed: false },
      ]);
    } finally {
      await server.close();
    }
  });
});
