/**
 * The peers of offline replay, each replaying the same recorded run of the research agent: Polly.js and nock at
 * the HTTP layer (the agent's real OpenAI client parses every recorded SSE body), and a same-layer peer that
 * answers each model and tool call with the recorded parsed response after a deep-equal check of the request, as
 * Jukebox's replay does. Each is used cold (its recording read from disk for every replay) and warm (loaded once).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import FetchAdapter from '@pollyjs/adapter-fetch';
import { Polly, type PollyConfig } from '@pollyjs/core';
import FSPersister from '@pollyjs/persister-fs';
import { type ResearchOutput, researchAgent } from '../examples/sample/agent';
import { researchTools } from '../examples/sample/tools';
import type { AgentContext } from '../src/agent/context';
import { createDirectContext } from '../src/agent/directContext';
import { ToolRegistry } from '../src/agent/tools';
import { LlmClient, localEndpoints } from '../src/llm';

export const REPLAY_INPUT = { question: 'Walk the knowledge base.', maxTurns: 27 };

/** One live run of the agent without Temporal against `url` (a model server, or a URL the peers intercept). */
export function runDirect(url: string, wrap: (ctx: AgentContext) => AgentContext = (c) => c) {
  const ctx = createDirectContext({
    llm: new LlmClient(localEndpoints(url)),
    tools: new ToolRegistry(researchTools),
  });
  return researchAgent.run(wrap(ctx), REPLAY_INPUT);
}

export interface Recordings {
  /** Polly's recordings folder. */
  pollyDir: string;
  /** nock definitions (nock.define's format). */
  nockFile: string;
  /** The same-layer peer's calls: requests and parsed responses, and the run's output. */
  callsFile: string;
  /** The URL the agent called; the peers answer it offline. */
  url: string;
  exchanges: number;
}

interface RecordedCall {
  kind: 'llm' | 'tool';
  /** The request as JSON: equal JSON is the deep-equal check (the request's fields come in its code's order). */
  request: string;
  /** The parsed response as JSON, parsed again for every answer: each replay gets its own copy. */
  response: string;
}

const pollyOptions = (dir: string): PollyConfig => ({
  adapters: ['fetch'],
  persister: 'fs',
  persisterOptions: { fs: { recordingsDir: dir } },
  // Each request of a growing chat is distinct, so the order of identical requests never matters; without
  // order, one Polly instance can replay the run many times.
  matchRequestsBy: { headers: false, order: false },
  logLevel: 'silent',
});

let registered = false;
function registerPolly() {
  if (registered) return;
  Polly.register(FetchAdapter);
  Polly.register(FSPersister);
  registered = true;
}

/** Records the run three ways against a live model server at `url` (its script loaded once per recording). */
export async function recordPeers(dir: string, url: string, reload: () => void): Promise<Recordings> {
  registerPolly();
  // Polly records the HTTP exchanges to its fs persister.
  reload();
  const recorder = new Polly('replay-bench', { ...pollyOptions(path.join(dir, 'polly')), mode: 'record' });
  await runDirect(url);
  await recorder.stop();

  // The same exchanges teed from fetch, written as nock definitions.
  reload();
  const defs: {
    scope: string;
    method: string;
    path: string;
    body: unknown;
    status: number;
    response: string;
    headers: Record<string, string>;
  }[] = [];
  const real = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    const res = await real(input, init);
    const body = await res.text();
    const headers: Record<string, string> = {};
    res.headers.forEach((v, k) => {
      headers[k] = v;
    });
    const u = new URL(String(input instanceof Request ? input.url : input));
    // The request body too: nock then matches each request by it (a deep-equal check, as the other peers make),
    // which is also what lets persisted definitions (warm nock) answer each request of the run with its own reply.
    const requestBody = JSON.parse(String(init?.body ?? 'null')) as unknown;
    defs.push({
      scope: u.origin,
      method: 'POST',
      path: u.pathname,
      body: requestBody,
      status: res.status,
      response: body,
      headers,
    });
    return new Response(body, { status: res.status, headers: res.headers });
  };
  try {
    await runDirect(url);
  } finally {
    globalThis.fetch = real;
  }
  const nockFile = path.join(dir, 'nock.json');
  writeFileSync(nockFile, JSON.stringify(defs));

  // The same-layer calls: each model and tool request with the parsed response the agent got.
  reload();
  const calls: RecordedCall[] = [];
  const output = await runDirect(url, (ctx) => ({
    ...ctx,
    async llm(request) {
      const response = await ctx.llm(request);
      calls.push({ kind: 'llm', request: JSON.stringify(request), response: JSON.stringify(response) });
      return response;
    },
    async tool<T>(name: string, args: Record<string, unknown>) {
      const response = await ctx.tool<T>(name, args);
      calls.push({
        kind: 'tool',
        request: JSON.stringify({ name, args }),
        response: JSON.stringify(response),
      });
      return response;
    },
  }));
  const callsFile = path.join(dir, 'calls.json');
  writeFileSync(callsFile, JSON.stringify({ calls, output }));
  return { pollyDir: path.join(dir, 'polly'), nockFile, callsFile, url, exchanges: defs.length };
}

/** Polly replaying the run: `cold` reads its recording from disk for this replay; warm reuses `instance`. */
export async function pollyReplay(r: Recordings, instance?: Polly): Promise<ResearchOutput> {
  registerPolly();
  const polly =
    instance ??
    new Polly('replay-bench', { ...pollyOptions(r.pollyDir), mode: 'replay', recordIfMissing: false });
  try {
    return await runDirect(r.url);
  } finally {
    if (!instance) await polly.stop();
  }
}

export function warmPolly(r: Recordings): Polly {
  registerPolly();
  return new Polly('replay-bench', { ...pollyOptions(r.pollyDir), mode: 'replay', recordIfMissing: false });
}

// Imported when used, not at the top: nock intercepts every HTTP request of the process from the moment it loads.
type Nock = typeof import('nock');
let nockModule: Nock | undefined;
async function nock(): Promise<Nock> {
  nockModule ??= (await import('nock')).default as unknown as Nock;
  return nockModule;
}

/** nock replaying the run, its definitions read from disk and registered for this replay. */
export async function nockColdReplay(r: Recordings): Promise<ResearchOutput> {
  const n = await nock();
  n.define(JSON.parse(readFileSync(r.nockFile, 'utf8')));
  const output = await runDirect(r.url);
  if (!n.isDone()) throw new Error('nock: not every recorded exchange was replayed');
  n.cleanAll();
  return output;
}

/** nock with the definitions registered once (persisted), replayed by every call of the returned function. */
export async function warmNock(r: Recordings): Promise<{ replay(): Promise<ResearchOutput>; done(): void }> {
  const n = await nock();
  const scopes = n.define(JSON.parse(readFileSync(r.nockFile, 'utf8')));
  for (const s of scopes) s.persist();
  return {
    replay: () => runDirect(r.url),
    done: () => n.cleanAll(),
  };
}

export function stopNock(): void {
  nockModule?.restore();
}

export interface RecordedRun {
  calls: RecordedCall[];
  output: ResearchOutput;
}

export function loadCalls(r: Recordings): RecordedRun {
  return JSON.parse(readFileSync(r.callsFile, 'utf8')) as RecordedRun;
}

/**
 * The same-layer peer: the agent's code runs against a context that answers each call with a copy of the
 * recorded response once the request deep-equals the recorded one, then the output is compared with the
 * recorded output. `run` is the recording already in memory (warm) or read from disk now (cold).
 */
export async function sameLayerReplay(r: Recordings, run?: RecordedRun): Promise<void> {
  const { calls, output } = run ?? loadCalls(r);
  let next = 0;
  const answer = (kind: 'llm' | 'tool', request: unknown) => {
    const c = calls[next++];
    if (!c || c.kind !== kind || JSON.stringify(request) !== c.request)
      throw new Error(`same-layer replay diverged at call ${next - 1}`);
    return JSON.parse(c.response) as unknown;
  };
  const ctx: AgentContext = {
    ...createDirectContext({
      llm: new LlmClient(localEndpoints(r.url)),
      tools: new ToolRegistry(researchTools),
    }),
    llm: async (request) => answer('llm', request) as never,
    tool: async <T>(name: string, args: Record<string, unknown>) => answer('tool', { name, args }) as T,
  };
  const got = await researchAgent.run(ctx, REPLAY_INPUT);
  if (next !== calls.length || !isDeepStrictEqual(got, output)) throw new Error('same-layer replay diverged');
}
