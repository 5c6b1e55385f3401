/**
 * MCP tool calls in the Shadow Booth over the official SDK client: read-only tools live, every other call
 * escrowed on disk until commit, with optional compensating calls (docs/shadow-booth.md, "MCP escrow").
 */
export { findGrant, type McpApprovalNeeded, type McpGrant, mcpApprovalReason } from './approval';
export {
  DEFAULT_MAX_ARGUMENT_BYTES,
  McpConnections,
  type McpServerConfig,
  type McpToolInfo,
  type McpTransportConfig,
} from './connections';
export {
  McpApprovalRequiredError,
  McpArgumentsError,
  McpArgumentsTooLargeError,
  McpEscrowCorruptError,
  McpServerUnavailableError,
  McpServerUnknownError,
  McpToolFailedError,
  McpToolUnknownError,
} from './errors';
export {
  ESCROW_FILE,
  type EscrowedCall,
  type EscrowState,
  IDEMPOTENCY_META_KEY,
  type McpCallOutcome,
  type McpCommitResult,
  type McpCompensateResult,
  type McpCompensation,
  McpEscrow,
  type McpToolResult,
  SENT_FORMAT,
  type SentCall,
} from './escrow';
