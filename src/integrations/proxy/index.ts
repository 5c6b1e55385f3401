/**
 * `jbx proxy`: an OpenAI/Anthropic-compatible recording proxy, one `.jbx` tape per session (header
 * `x-jukebox-session` or route `/s/<session>/`) guarded by a circuit breaker each, and its replay mode serving
 * answers from a tape offline.
 */
export { ProxyListenError, ProxySessionTrippedError, ProxyUpstreamError } from './errors';
export { type ProxyOptions, type RecordingProxy, type SessionInfo, startProxy } from './server';
export { type ProxyBreakerOptions, type Refusal, SessionBreaker } from './sessionBreaker';
export { DEFAULT_SESSION, SESSION_HEADER, sessionOf } from './sessions';
