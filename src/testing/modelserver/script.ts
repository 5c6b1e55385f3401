import { readFileSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { ModelScriptInvalidError, ModelScriptUnreadableError } from './errors';

export type ScriptProvider = 'openai' | 'anthropic';

/** Every given field must hold for the turn to answer a request. Text fields are substrings. */
export interface TurnMatch {
  provider?: ScriptProvider;
  model?: string;
  lastUser?: string;
  toolResult?: string;
}

export interface ScriptToolCall {
  name: string;
  arguments?: Record<string, unknown>;
  /** Fixed tool call id; by default the server makes one up per request. */
  id?: string;
}

export interface TurnReply {
  text?: string;
  toolCalls?: ScriptToolCall[];
  usage?: { input?: number; output?: number };
  /** Pause between streamed chunks (at most a minute). */
  chunkDelayMs?: number;
  chunkSize?: number;
  /**
   * Pause before the first chunk, as a reasoning model thinks before its first token (at most ten minutes, the
   * official SDKs' default request timeout). A streamed reply sends its response headers at once, then nothing
   * until the pause is over; an unstreamed reply, or an error `status`, is sent after it.
   */
  firstChunkDelayMs?: number;
  /** Answer with this HTTP status and an API-shaped error (message: `text`) instead of a completion. */
  status?: number;
}

export interface ScriptTurn {
  id?: string;
  match?: TurnMatch;
  reply: TurnReply;
  repeat?: boolean;
}

export interface ModelScript {
  name?: string;
  turns: ScriptTurn[];
}

/** A validated script and where it came from, so errors can name the file. */
export interface LoadedScript {
  script: ModelScript;
  source: string;
  name: string;
}

export function loadModelScript(pathOrObject: ModelScript | string): ModelScript {
  return readModelScript(pathOrObject).script;
}

export function readModelScript(pathOrObject: unknown, source?: string): LoadedScript {
  if (typeof pathOrObject === 'string') {
    const file = path.resolve(pathOrObject);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new ModelScriptUnreadableError(file, err);
    }
    const script = validateModelScript(parseScriptText(text, file), file);
    return { script, source: file, name: script.name ?? path.basename(file).replace(/\.(ya?ml|json)$/i, '') };
  }
  const label = source ?? 'the in-memory script';
  // A copy, so a caller editing its object later cannot change turns the server is serving.
  const script = validateModelScript(structuredCloneOrFail(pathOrObject, label), label);
  return { script, source: label, name: script.name ?? 'inline' };
}

/** Parses JSON or YAML (YAML is a superset of JSON, but JSON files get JSON's stricter errors). */
export function parseScriptText(text: string, source: string): unknown {
  try {
    return source.toLowerCase().endsWith('.json')
      ? JSON.parse(text)
      : YAML.parse(text, { prettyErrors: true });
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new ModelScriptInvalidError(source, 'the file', `does not parse (${reason})`, err);
  }
}

function structuredCloneOrFail(value: unknown, source: string): unknown {
  try {
    return structuredClone(value);
  } catch (err) {
    throw new ModelScriptInvalidError(
      source,
      'the script',
      'is not plain data (functions or classes inside?)',
      err,
    );
  }
}

/** The official SDKs give up on a request after ten minutes by default; a longer pause could only time out. */
export const MAX_FIRST_CHUNK_DELAY_MS = 10 * 60_000;

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string')
    return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v)}`;
  return typeof v === 'object' ? 'an object' : `${typeof v} ${String(v)}`;
}

export function validateModelScript(value: unknown, source: string): ModelScript {
  const fail = (field: string, problem: string): never => {
    throw new ModelScriptInvalidError(source, field, problem);
  };
  const object = (v: unknown, field: string, allowed: readonly string[]): Obj => {
    if (!isObject(v)) return fail(field, `must be an object (got ${describe(v)})`);
    for (const key of Object.keys(v))
      if (!allowed.includes(key))
        fail(`${field}.${key}`, `is not a known key (known: ${allowed.join(', ')})`);
    return v;
  };
  const optString = (o: Obj, key: string, field: string, nonEmpty = false): void => {
    const v = o[key];
    if (v === undefined) return;
    if (typeof v !== 'string') fail(`${field}.${key}`, `must be a string (got ${describe(v)})`);
    else if (nonEmpty && v.length === 0) fail(`${field}.${key}`, 'must not be empty');
  };
  const optNumber = (
    o: Obj,
    key: string,
    field: string,
    min: number,
    integer: boolean,
    max = Infinity,
  ): void => {
    const v = o[key];
    if (v === undefined) return;
    const ok =
      typeof v === 'number' &&
      Number.isFinite(v) &&
      v >= min &&
      v <= max &&
      (!integer || Number.isInteger(v));
    const kind = integer ? 'an integer' : 'a number';
    const range = max === Infinity ? `>= ${min}` : `from ${min} to ${max}`;
    if (!ok) fail(`${field}.${key}`, `must be ${kind} ${range} (got ${describe(v)})`);
  };

  const top = object(value, 'the script', ['name', 'turns']);
  optString(top, 'name', 'script');
  if (!Array.isArray(top.turns)) return fail('turns', `must be a list of turns (got ${describe(top.turns)})`);
  if (top.turns.length === 0) fail('turns', 'is empty: add at least one turn with a reply');

  const seenIds = new Map<string, number>();
  top.turns.forEach((raw: unknown, i: number) => {
    const idHint = isObject(raw) && typeof raw.id === 'string' ? ` (id "${raw.id}")` : '';
    const at = `turns[${i}]${idHint}`;
    const turn = object(raw, at, ['id', 'match', 'reply', 'repeat']);
    optString(turn, 'id', at, true);
    if (typeof turn.id === 'string') {
      const earlier = seenIds.get(turn.id);
      if (earlier !== undefined) fail(`${at}.id`, `repeats the id of turns[${earlier}]: ids must be unique`);
      seenIds.set(turn.id, i);
    }
    if (turn.repeat !== undefined && typeof turn.repeat !== 'boolean')
      fail(`${at}.repeat`, `must be true or false (got ${describe(turn.repeat)})`);

    if (turn.match !== undefined) {
      const match = object(turn.match, `${at}.match`, ['provider', 'model', 'lastUser', 'toolResult']);
      if (match.provider !== undefined && match.provider !== 'openai' && match.provider !== 'anthropic')
        fail(`${at}.match.provider`, `must be "openai" or "anthropic" (got ${describe(match.provider)})`);
      for (const key of ['model', 'lastUser', 'toolResult']) optString(match, key, `${at}.match`, true);
    }

    if (turn.reply === undefined) fail(`${at}.reply`, 'is missing: every turn needs a reply');
    const replyAt = `${at}.reply`;
    const reply = object(turn.reply, replyAt, [
      'text',
      'toolCalls',
      'usage',
      'chunkDelayMs',
      'chunkSize',
      'firstChunkDelayMs',
      'status',
    ]);
    optString(reply, 'text', replyAt);
    optNumber(reply, 'chunkDelayMs', replyAt, 0, false, 60_000);
    optNumber(reply, 'chunkSize', replyAt, 1, true);
    optNumber(reply, 'firstChunkDelayMs', replyAt, 0, false, MAX_FIRST_CHUNK_DELAY_MS);
    optNumber(reply, 'status', replyAt, 400, true, 599);
    if (reply.usage !== undefined) {
      const usage = object(reply.usage, `${replyAt}.usage`, ['input', 'output']);
      optNumber(usage, 'input', `${replyAt}.usage`, 0, true);
      optNumber(usage, 'output', `${replyAt}.usage`, 0, true);
    }
    if (reply.toolCalls !== undefined) {
      if (!Array.isArray(reply.toolCalls) || reply.toolCalls.length === 0)
        fail(`${replyAt}.toolCalls`, `must be a non-empty list (got ${describe(reply.toolCalls)})`);
      (reply.toolCalls as unknown[]).forEach((rawCall, j) => {
        const callAt = `${replyAt}.toolCalls[${j}]`;
        const call = object(rawCall, callAt, ['name', 'arguments', 'id']);
        if (typeof call.name !== 'string' || call.name.length === 0)
          fail(`${callAt}.name`, `must be a non-empty string (got ${describe(call.name)})`);
        optString(call, 'id', callAt, true);
        if (call.arguments !== undefined && !isObject(call.arguments))
          fail(
            `${callAt}.arguments`,
            `must be an object of named arguments (got ${describe(call.arguments)})`,
          );
      });
    }
    if (reply.text === undefined && reply.toolCalls === undefined && reply.status === undefined)
      fail(replyAt, 'says nothing: give it text, toolCalls, or an error status');
  });
  return value as ModelScript;
}
