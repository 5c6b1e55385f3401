/**
 * The accounting demo as a fixture world for offline replay's restaging (jukebox.config.json `"booth"`): a fresh
 * copy of the seed ledger, accounts and outbox in `dir`, and the booth over it. Replay runs the accounting tools
 * again there to see what they stage now; nothing in it is ever committed.
 */
import type { ShadowBoothConfig } from '../../src/booth/shadowBooth';
import { accountingBooth, prepareAccountingDemo } from './demo';

export async function replayWorld(dir: string): Promise<ShadowBoothConfig> {
  const config = accountingBooth(await prepareAccountingDemo(dir));
  // A replay waits for its notify server as long as it takes to start (tsx on a busy machine can take seconds).
  return { ...config, mcpServers: config.mcpServers?.map((s) => ({ ...s, connectTimeoutMs: 60_000 })) };
}
