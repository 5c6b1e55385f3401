/**
 * One MCP client per configured server, shared by every run on the worker: connecting a stdio server spawns a
 * process, too slow to do per step. The clients hold no run state; escrow lives on disk per run.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { requireOptional } from '../../errors/optionalDependency';
import { McpServerUnavailableError, McpServerUnknownError, McpToolUnknownError } from './errors';

const MCP_FEATURE = "The Shadow Booth's MCP calls (mcpServers)";

/**
 * The MCP SDK is an optional peer (15 MiB and 89 packages an agent without MCP servers never loads): it is
 * required when the first server is connected, and a missing one says what to install.
 */
function mcpSdk() {
  return {
    Client: requireOptional<{ Client: typeof Client }>(
      '@modelcontextprotocol/sdk',
      MCP_FEATURE,
      '/client/index.js',
    ).Client,
    StdioClientTransport: requireOptional<{ StdioClientTransport: typeof StdioClientTransport }>(
      '@modelcontextprotocol/sdk',
      MCP_FEATURE,
      '/client/stdio.js',
    ).StdioClientTransport,
    InMemoryTransport: requireOptional<{ InMemoryTransport: typeof InMemoryTransport }>(
      '@modelcontextprotocol/sdk',
      MCP_FEATURE,
      '/inMemory.js',
    ).InMemoryTransport,
  };
}

export type McpTransportConfig =
  | { kind: 'stdio'; command: string; args?: string[]; env?: Record<string, string>; cwd?: string }
  /** A server built with the SDK in this process, linked through the SDK's InMemoryTransport. */
  | { kind: 'in-process'; createServer: () => McpServer };

export interface McpServerConfig {
  /** The name agents and escrow records use for this server. */
  name: string;
  transport: McpTransportConfig;
  /** Handshake and tool listing must finish within this (default 10 s). */
  connectTimeoutMs?: number;
  /** One tool call must finish within this (default 60 s). */
  callTimeoutMs?: number;
  /**
   * Whether the operator believes this server's tool annotations. Only then does a tool it marks
   * `readOnlyHint: true` run live; an untrusted server's annotations are its own claim, and every one of its
   * tools is escrowed until commit unless listed in `liveTools`. Default false.
   */
  trusted?: boolean;
  /**
   * Tools of this server that run live whatever they declare: the operator vouches for them. Empty by default.
   */
  liveTools?: string[];
  /**
   * Tools of this server whose calls wait for a person's approval before they run or are escrowed, whatever
   * the server's annotations say (src/booth/mcp/approval.ts; a `destructiveHint: true` asks too).
   */
  approvalTools?: string[];
  /**
   * Largest arguments object of one call (and of its compensating call), in bytes of JSON; larger calls are
   * refused with `McpArgumentsTooLargeError` before anything runs or is escrowed. Default 1 MiB.
   */
  maxArgumentBytes?: number;
}

export const DEFAULT_MAX_ARGUMENT_BYTES = 1024 * 1024;

/** What the booth needs to know of a listed tool. */
export interface McpToolInfo {
  name: string;
  /** The server's claim: a boolean `readOnlyHint: true` not contradicted by `destructiveHint: true`. */
  readOnly: boolean;
  /** Whether calls run live: listed in `liveTools`, or `readOnly` on a server the config trusts. */
  live: boolean;
  annotations: Record<string, unknown>;
}

interface Connected {
  client: Client;
  tools: Map<string, McpToolInfo>;
}

function toolInfo(tool: { name: string; annotations?: Record<string, unknown> }): McpToolInfo {
  const annotations = tool.annotations ?? {};
  // Strictly the boolean true: a string "true" or a tool that also says it is destructive is not read-only.
  const readOnly = annotations.readOnlyHint === true && annotations.destructiveHint !== true;
  return { name: tool.name, readOnly, live: false, annotations };
}

function withTimeout<T>(what: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    what,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(onTimeout()), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

export class McpConnections {
  private readonly configs = new Map<string, McpServerConfig>();
  private readonly live = new Map<string, Promise<Connected>>();

  constructor(servers: McpServerConfig[] = []) {
    for (const s of servers) {
      if (this.configs.has(s.name)) throw new Error(`MCP server ${s.name} is configured twice.`);
      const max = s.maxArgumentBytes;
      if (max !== undefined && (!Number.isInteger(max) || max <= 0))
        throw new Error(
          `MCP server ${s.name}: maxArgumentBytes must be a positive whole number, not ${max}.`,
        );
      this.configs.set(s.name, s);
    }
  }

  names(): string[] {
    return [...this.configs.keys()];
  }

  config(server: string): McpServerConfig {
    const c = this.configs.get(server);
    if (!c) throw new McpServerUnknownError(server, this.names());
    return c;
  }

  /** The connected client, connecting (and listing tools) on first use or after the server went away. */
  async client(server: string): Promise<Client> {
    return (await this.connected(server)).client;
  }

  /** The tool as the server lists it; an unlisted name is refused before anything is run or escrowed. */
  async tool(server: string, name: string): Promise<McpToolInfo> {
    const c = await this.connected(server);
    let info = c.tools.get(name);
    if (!info) {
      // The list may have changed since we connected (tools/list_changed); ask once more before refusing.
      c.tools = await this.listTools(server, c.client);
      info = c.tools.get(name);
    }
    if (!info) throw new McpToolUnknownError(server, name, [...c.tools.keys()]);
    const cfg = this.config(server);
    const live = cfg.liveTools?.includes(name) === true || (cfg.trusted === true && info.readOnly);
    return { ...info, live };
  }

  /** Forgets a server's connection, e.g. after a call failed because its transport closed. */
  async drop(server: string): Promise<void> {
    const c = this.live.get(server);
    this.live.delete(server);
    if (c) await c.then((x) => x.client.close()).catch(() => {});
  }

  async close(): Promise<void> {
    await Promise.all([...this.live.keys()].map((s) => this.drop(s)));
  }

  private connected(server: string): Promise<Connected> {
    const existing = this.live.get(server);
    if (existing) return existing;
    const attempt = this.connect(server);
    this.live.set(server, attempt);
    // A failed connect must not stick: the next step tries again (the server may be back).
    attempt.catch(() => {
      if (this.live.get(server) === attempt) this.live.delete(server);
    });
    return attempt;
  }

  private async connect(server: string): Promise<Connected> {
    const cfg = this.config(server);
    const { Client, StdioClientTransport, InMemoryTransport } = mcpSdk();
    const client = new Client({ name: 'jukebox-shadow-booth', version: '0.1.0' });
    let transport: Transport;
    let stderr = '';
    if (cfg.transport.kind === 'stdio') {
      const stdio = new StdioClientTransport({
        command: cfg.transport.command,
        args: cfg.transport.args ?? [],
        ...(cfg.transport.env ? { env: cfg.transport.env } : {}),
        ...(cfg.transport.cwd ? { cwd: cfg.transport.cwd } : {}),
        stderr: 'pipe',
      });
      stdio.stderr?.on('data', (d) => {
        stderr = (stderr + String(d)).slice(-2000);
      });
      transport = stdio;
    } else {
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await cfg.transport.createServer().connect(serverSide);
      transport = clientSide;
    }
    const timeoutMs = cfg.connectTimeoutMs ?? 10_000;
    try {
      await withTimeout(
        client.connect(transport),
        timeoutMs,
        () => new Error(`no MCP handshake within ${timeoutMs} ms`),
      );
      const tools = await this.listTools(server, client);
      client.onclose = () => {
        this.live.delete(server);
      };
      return { client, tools };
    } catch (err) {
      await client.close().catch(() => {});
      const reason = err instanceof Error ? err.message : String(err);
      throw new McpServerUnavailableError(
        server,
        `${reason}${stderr ? ` (server stderr: ${stderr.trim().slice(-400)})` : ''}`,
        err,
      );
    }
  }

  private async listTools(server: string, client: Client): Promise<Map<string, McpToolInfo>> {
    const out = new Map<string, McpToolInfo>();
    let cursor: string | undefined;
    const timeout = this.config(server).connectTimeoutMs ?? 10_000;
    do {
      const page = await client.listTools(cursor ? { cursor } : {}, { timeout });
      for (const t of page.tools) out.set(t.name, toolInfo(t));
      cursor = page.nextCursor;
    } while (cursor);
    return out;
  }
}
