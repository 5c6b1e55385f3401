/**
 * A LangGraph.js graph run as a Jukebox agent: the graph is the workflow body, and its model and tool nodes
 * reach the world only through ctx.llm / ctx.tool, so each model call and each tool call is a recorded,
 * durable, replayable Temporal step while LangGraph decides the control flow.
 */
import './sandboxGlobals';
import type * as LangGraph from '@langchain/langgraph';
import { type AgentContext, defineAgent } from '../../src/agent';
import type { ChatMessage, LlmResponse } from '../../src/llm/types';
import { researchToolSpecs } from '../sample/agent';

// The `web` entry point: the main one pulls in node:async_hooks, which the workflow sandbox must not load.
// Same API; required by path because this project's TypeScript resolution predates package exports.
const { Annotation, END, START, StateGraph } = require('@langchain/langgraph/web') as typeof LangGraph;

export interface GraphInput {
  question: string;
  maxTurns?: number;
}

export interface GraphOutput {
  answer: string;
  /** The node each graph step ran, in order: the control flow LangGraph chose. */
  path: string[];
}

const GraphState = Annotation.Root({
  messages: Annotation<ChatMessage[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  last: Annotation<LlmResponse | null>({ reducer: (_a, b) => b, default: () => null }),
  path: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});
type State = typeof GraphState.State;

export function researchGraph(ctx: AgentContext) {
  const model = async (state: State) => {
    const response = await ctx.llm({
      provider: 'openai',
      model: 'gpt-4o-mini',
      system: 'You are a careful research assistant. Use the tools; never guess a number.',
      messages: state.messages,
      tools: researchToolSpecs,
    });
    const reply: ChatMessage = { role: 'assistant', content: response.text, toolCalls: response.toolCalls };
    return { messages: [reply], last: response, path: ['model'] };
  };
  const tools = async (state: State) => {
    const results: ChatMessage[] = [];
    for (const call of state.last?.toolCalls ?? []) {
      const output = await ctx.tool(call.name, call.arguments);
      const content = typeof output === 'string' ? output : JSON.stringify(output);
      results.push({ role: 'tool', toolCallId: call.id, name: call.name, content });
    }
    return { messages: results, path: ['tools'] };
  };
  return new StateGraph(GraphState)
    .addNode('model', model)
    .addNode('tools', tools)
    .addEdge(START, 'model')
    .addConditionalEdges('model', (s: State) => (s.last?.toolCalls.length ? 'tools' : END))
    .addEdge('tools', 'model')
    .compile();
}

export const langGraphAgent = defineAgent<GraphInput, GraphOutput>('langGraphAgent', async (ctx, input) => {
  const final = await researchGraph(ctx).invoke(
    { messages: [{ role: 'user', content: input.question }] },
    // Each model+tools round is two graph steps.
    { recursionLimit: 2 * (input.maxTurns ?? 8) + 1 },
  );
  return { answer: final.last?.text ?? '', path: final.path };
});
