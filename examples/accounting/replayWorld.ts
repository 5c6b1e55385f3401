/**
 * The accounting demo as a fixture world for offline replay's restaging (jukebox.config.json `"booth"`): a fresh
 * copy of the seed ledger, accounts and outbox in `dir`, and the booth over it. Replay runs the accounting tools
 * again there to see what they stage now; nothing in it is ever committed.
 */
import type { ShadowBoothConfig } from '../../src/booth/shadowBooth';
import { accountingBooth, prepareAccountingDemo } from './demo';

export async function replayWorld(dir: string): Promise<ShadowBoothConfig> {
  return accountingBooth(await prepareAccountingDemo(dir));
}
