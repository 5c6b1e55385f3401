/**
 * `jbx proxy`: an OpenAI/Anthropic-compatible recording proxy, one `.jbx` tape per session (header
 * `x-jukebox-session` or route `/s/<session>/`), and its replay mode serving answers from a tape offline.
 */
export { ProxyListenError, ProxyUpstreamError } from './errors';
export { type ProxyOptions, type RecordingProxy, type SessionInfo, startProxy } from './server';
export { DEFAULT_SESSION, SESSION_HEADER, sessionOf } from './sessions';
