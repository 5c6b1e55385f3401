/**
 * The Temporal workflow sandbox is a bare V8 realm without Web Streams, which @langchain/core's stream helpers
 * reference at import time. The graph never streams inside a workflow (model output streams in the llm
 * activity); the classes only have to exist. Imported before LangGraph.
 */
import { ReadableStream, TransformStream, WritableStream } from 'web-streams-polyfill';

const g = globalThis as Record<string, unknown>;
g.ReadableStream ??= ReadableStream;
g.WritableStream ??= WritableStream;
g.TransformStream ??= TransformStream;
