/** Who decides, when a command or the viewer does not say: --by, else $JUKEBOX_DECIDER, else the login name. */
import os from 'node:os';

export function deciderOf(flag: string | boolean | undefined): string {
  if (typeof flag === 'string' && flag.trim()) return flag.trim();
  return process.env.JUKEBOX_DECIDER?.trim() || os.userInfo().username;
}
