import { crossRealmError, JukeboxError } from '../../errors';

/**
 * The MCP server could not be reached (spawn failed, the process exited, the connection timed out). Retryable:
 * a server that is restarting comes back; after the step's retries the run is rolled back.
 */
export class McpServerUnavailableError extends JukeboxError {
  readonly server: string;
  constructor(server: string, detail: string, cause?: unknown) {
    super(
      'MCP_SERVER_UNAVAILABLE',
      `MCP server ${JSON.stringify(server)} is unavailable: ${detail}; check that it starts (command, args, cwd) and answers the MCP handshake, then retry`,
      { cause },
    );
    this.server = server;
  }
}
crossRealmError('McpServerUnavailableError', McpServerUnavailableError);

/** A server name the booth was not configured with. */
export class McpServerUnknownError extends JukeboxError {
  constructor(server: string, known: string[]) {
    super(
      'MCP_SERVER_UNKNOWN',
      `no MCP server named ${JSON.stringify(server)} is configured on this worker's booth (known: ${known.join(', ') || 'none'}); add it to booth.mcpServers`,
      { nonRetryable: true },
    );
  }
}
crossRealmError('McpServerUnknownError', McpServerUnknownError);

/** The server does not list a tool of that exact name: the call is neither run nor escrowed. */
export class McpToolUnknownError extends JukeboxError {
  readonly server: string;
  readonly tool: string;
  constructor(server: string, tool: string, known: string[]) {
    super(
      'MCP_TOOL_UNKNOWN',
      `MCP server ${JSON.stringify(server)} lists no tool ${JSON.stringify(tool)} (it lists: ${known.slice(0, 20).join(', ') || 'none'}); names are exact and case-sensitive`,
      { nonRetryable: true },
    );
    this.server = server;
    this.tool = tool;
  }
}
crossRealmError('McpToolUnknownError', McpToolUnknownError);

/** Arguments that are not a plain JSON object: MCP tool arguments are a JSON object, nothing else. */
export class McpArgumentsError extends JukeboxError {
  constructor(server: string, tool: string, problem: string) {
    super(
      'MCP_ARGUMENTS_INVALID',
      `MCP call ${server}/${tool}: ${problem}; pass a plain JSON object of arguments`,
      { nonRetryable: true },
    );
  }
}
crossRealmError('McpArgumentsError', McpArgumentsError);

/** A call's arguments are over the server's `maxArgumentBytes`: neither run nor escrowed. */
export class McpArgumentsTooLargeError extends JukeboxError {
  readonly server: string;
  readonly tool: string;
  readonly bytes: number;
  readonly limit: number;
  constructor(server: string, tool: string, bytes: number, limit: number) {
    super(
      'MCP_ARGUMENTS_TOO_LARGE',
      `MCP call ${server}/${tool}: its arguments are ${bytes} bytes of JSON, over the limit of ${limit}; nothing was run or escrowed. Pass a reference (a staged file's path) instead of the content, or raise the server's maxArgumentBytes in the booth config`,
      { nonRetryable: true },
    );
    this.server = server;
    this.tool = tool;
    this.bytes = bytes;
    this.limit = limit;
  }
}
crossRealmError('McpArgumentsTooLargeError', McpArgumentsTooLargeError);

/**
 * The tool ran and reported an error (`isError: true`) or the server answered the call with a protocol
 * error. Not retryable: the server has answered; what to do next is in its text.
 */
export class McpToolFailedError extends JukeboxError {
  readonly server: string;
  readonly tool: string;
  constructor(server: string, tool: string, detail: string, cause?: unknown) {
    super('MCP_TOOL_FAILED', `MCP tool ${server}/${tool} failed: ${detail}`, { cause, nonRetryable: true });
    this.server = server;
    this.tool = tool;
  }
}
crossRealmError('McpToolFailedError', McpToolFailedError);

/** The escrow file on disk is unreadable or not what this code wrote. */
export class McpEscrowCorruptError extends JukeboxError {
  constructor(file: string, detail: string, cause?: unknown) {
    super(
      'MCP_ESCROW_CORRUPT',
      `MCP escrow file ${file} is unusable: ${detail}; inspect it, then roll the run back (nothing escrowed has run yet unless its state says applied)`,
      { cause, nonRetryable: true },
    );
  }
}
crossRealmError('McpEscrowCorruptError', McpEscrowCorruptError);

/**
 * The call waits for a person's approval: the tool step ends without staging anything, the run asks, and the
 * step runs again once approved. Tools should let it propagate; catching it does not let the call through.
 */
export class McpApprovalRequiredError extends JukeboxError {
  constructor(server: string, tool: string) {
    super(
      'MCP_APPROVAL_REQUIRED',
      `the MCP call ${server}/${tool} waits for a person's approval; the step stops here and runs again once it is approved`,
      { nonRetryable: true },
    );
  }
}
crossRealmError('McpApprovalRequiredError', McpApprovalRequiredError);
