/** A local scripted model server speaking the OpenAI Chat Completions and Anthropic Messages APIs, for tests. */
export {
  ModelScriptInvalidError,
  ModelScriptUnreadableError,
  ModelServerListenError,
  ModelServerPortInUseError,
} from './errors';
export type { ModelScript, ScriptProvider, ScriptToolCall, ScriptTurn, TurnMatch, TurnReply } from './script';
export { loadModelScript, validateModelScript } from './script';
export { type ModelServer, type StartModelServerOptions, startModelServer } from './server';
export type { ServedTurn } from './session';
