/** Tools agents can call: a registry by name, run inside activities. */
export * from './toolRegistry';
