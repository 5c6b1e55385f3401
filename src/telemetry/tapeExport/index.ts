/** Tapes exported as OTLP GenAI telemetry after the fact: spans, metrics, their OTLP/JSON, posting it. */
export { exportTape, type TapeExport, type TapeExportOptions } from './exportTape';
export { type KeyValue, keyValues, metricsRequest, traceRequest } from './otlpJson';
export { type PostResult, postOtlp } from './postOtlp';
export { type ChatMeasurement, type ExportedSpan, type TapeTelemetry, tapeTelemetry } from './tapeSpans';
