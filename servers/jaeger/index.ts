/** The pinned Jaeger (built from source like the Temporal CLI), running it, and querying it for traces. */
export { JaegerInstallError, JaegerQueryError, JaegerStartError } from './errors';
export { ensureJaeger, JAEGER_PACKAGE, JAEGER_VERSION, jaegerVersion } from './jaegerBinary';
export {
  type JaegerSpan,
  type JaegerTag,
  type JaegerTrace,
  jaegerTags,
  jaegerTrace,
  jaegerTraces,
} from './jaegerQuery';
export { type JaegerServer, type StartJaegerOptions, startJaeger, stopDetachedJaeger } from './jaegerServer';
