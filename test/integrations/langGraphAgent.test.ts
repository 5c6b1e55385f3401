import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GraphOutput } from '../../examples/langgraph/agent';
import { researchTools } from '../../examples/sample/tools';
import { ReplayBook, wrapOpenAI } from '../../src/integrations';
import { localEndpoints } from '../../src/llm';
import { TapeStore } from '../../src/recorder';
import { readTape, resolveMessages, verifyTape } from '../../src/recorder/tape';
import { bundleAgentWorkflows, forkRun, JukeboxPlugin, startAgent } from '../../src/temporal';
import { loadModelScript, type ModelServer, startModelServer } from '../../src/testing/modelserver';
import { connectTestWorker } from '../support/temporal';
import { summarizeTool } from './fixtures/summarizeTool';

const WORKFLOWS = path.join(__dirname, 'fixtures/workflows.ts');
const SAMPLE = loadModelScript(path.join(__dirname, '../../examples/sample/script.yaml'));
const SCRIPT = {
  name: 'integrations',
  turns: [
    ...SAMPLE.turns,
    { id: 'summary', match: { lastUser: 'Summarize:' }, reply: { text: 'A short summary.', chunkSize: 4 } },
  ],
};
const QUESTION = 'How many times around the Earth is the distance to the Moon?';

describe('frameworks as Jukebox agents on the real Temporal dev server', () => {
  let model: ModelServer;
  let env: Awaited<ReturnType<typeof connectTestWorker>>;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-integrations-'));
  const store = new TapeStore({ dir });

  beforeAll(async () => {
    model = await startModelServer({ script: SCRIPT });
    env = await connectTestWorker({
      endpoints: localEndpoints(model.url),
      tools: [...researchTools, summarizeTool(model.openaiBaseURL)],
      workflowsPath: WORKFLOWS,
      tape: { dir },
    });
  });
  afterAll(async () => {
    await env?.close();
    await model?.close();
  });

  const run = async <O>(workflow: string, input: Record<string, unknown>) => {
    const handle = await startAgent<Record<string, unknown>, O>(workflow, input, {
      connection: env.connection,
      namespace: env.namespace,
      taskQueue: env.taskQueue,
    });
    const result = (await handle.result()) as { output: O };
    const runId = (await handle.describe()).runId;
    return { handle, output: result.output, file: store.pathFor(handle.workflowId, runId) };
  };

  it('a LangGraph graph: its model and tool nodes are recorded steps, and its history replays deterministically', async () => {
    model.loadScript(SCRIPT);
    const { handle, output, file } = await run<GraphOutput>('langGraphAgent', { question: QUESTION });
    expect(output.answer).toContain('9.6 trips');
    expect(output.path).toEqual(['model', 'tools', 'model', 'tools', 'model', 'tools', 'model']);
    expect(model.requestCount()).toBe(4);

    expect(verifyTape(file)).toMatchObject({ ok: true, sealed: true });
    const tape = readTape(file);
    const requests = tape.frames.filter((f) => f.kind === 'llm.request');
    const toolCalls = tape.frames
      .filter((f) => f.kind === 'tool.call')
      .map((f) => (f.payload as { toolName: string }).toolName);
    expect(requests).toHaveLength(4);
    expect(toolCalls).toEqual(['lookup_fact', 'lookup_fact', 'calculate']);
    const lastRequest = requests[3]?.payload as { messages: never };
    const lastAsked = resolveMessages(tape, lastRequest.messages);
    expect(lastAsked).toHaveLength(7);

    // Temporal re-runs the graph against the recorded history: any nondeterminism in it fails here.
    const history = await handle.fetchHistory();
    await Worker.runReplayHistory(
      // The plugin's replay side reads the history's payload claims from the content store beside the tapes.
      {
        workflowBundle: await bundleAgentWorkflows(WORKFLOWS),
        plugins: [new JukeboxPlugin({ tape: { dir } })],
      },
      history,
      handle.workflowId,
    );
  });

  it('a LangGraph run forks: the graph resumes at a later model node with another model, earlier steps from the tape', async () => {
    model.loadScript(SCRIPT);
    const parent = await run<GraphOutput>('langGraphAgent', { question: QUESTION });
    const parentRequests = readTape(parent.file).frames.filter((f) => f.kind === 'llm.request');
    // Steps: model 0, tools 1, model 2, tools 3, model 4, ... Fork at the third model call.
    const atStep = parentRequests[2]!.step;
    // Only the turns after the fork point: a fresh script would answer the question's first turn again, since
    // its match (the user's question) holds for every request of the conversation.
    model.loadScript({
      ...SCRIPT,
      turns: SCRIPT.turns.filter((t) => t.id !== 'look-up-moon' && t.id !== 'look-up-earth'),
    }); // also resets the request count
    const fork = await forkRun({
      parentTape: parent.file,
      atStep,
      overrides: { model: 'gpt-4o' },
      connection: env.connection,
      namespace: env.namespace,
      taskQueue: env.taskQueue,
      tapeDir: dir,
    });
    expect(fork.error).toBeUndefined();
    const output = fork.result?.output as GraphOutput;
    expect(output.answer).toContain('9.6 trips');
    expect(output.path).toEqual(parent.output.path);
    // Only the model calls from the fork point on went live: the third and the fourth.
    expect(model.requestCount()).toBe(2);
    const tape = readTape(fork.tapeFile);
    expect(tape.header.parent).toMatchObject({ forkStep: atStep });
    const models = tape.frames
      .filter((f) => f.kind === 'llm.request')
      .map((f) => [f.step, (f.payload as { model: string }).model]);
    for (const [step, m] of models) expect(m).toBe((step as number) < atStep ? 'gpt-4o-mini' : 'gpt-4o');
  });

  it('a wrapped openai client inside a tool records onto that step of the run tape, and replays from it', async () => {
    model.loadScript(SCRIPT);
    const { output, file } = await run<{ summary: string }>('summaryAgent', { text: 'the Moon is far' });
    expect(output.summary).toBe('A short summary.');
    const tape = readTape(file);
    const toolStep = tape.frames.find((f) => f.kind === 'tool.call');
    const toolCall = toolStep?.payload as { callId: string };
    const llm = tape.frames.filter((f) => f.kind?.startsWith('llm.'));
    expect(llm.map((f) => f.kind)).toEqual(['llm.request', 'llm.chunk', 'llm.response']);
    for (const f of llm) {
      expect(f.step).toBe(toolStep?.step);
      expect((f.payload as { activityId: string }).activityId).toBe(toolCall.callId);
    }

    const book = ReplayBook.fromTape(file);
    expect(book.calls).toHaveLength(1);
    const offline = wrapOpenAI(new OpenAI({ baseURL: 'http://127.0.0.1:9/v1', apiKey: 'x' }), {
      replay: book,
    });
    const stream = await offline.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Summarize: the Moon is far' }],
      stream: true,
    });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
    expect(text).toBe('A short summary.');
  });
});
