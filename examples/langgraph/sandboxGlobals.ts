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
// LangGraph's run loop schedules with queueMicrotask, which the sandbox also lacks; a resolved promise's
// continuation is the same microtask, and as deterministic.
g.queueMicrotask ??= (task: () => void) => void Promise.resolve().then(task);
// LangChain's uuids (run and checkpoint ids) draw on crypto.getRandomValues. In the sandbox Math.random is
// Temporal's seeded generator, so ids drawn from it are the same on every replay of the history.
g.crypto ??= {
  getRandomValues<T extends ArrayBufferView>(array: T): T {
    const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
    for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(Math.random() * 256);
    return array;
  },
};
