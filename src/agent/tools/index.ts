/** Tools agents can call: a registry by name, run inside activities. */

export {
  mergeToolPolicies,
  TIMEOUT_IS_FINAL,
  type ToolPolicy,
  ToolPolicyError,
  type ToolRetryPolicy,
  toolPolicyOf,
} from './toolPolicy';
export * from './toolRegistry';
