import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DevServerPortTakenError, freePort } from '../../../servers/devserver';
import { startPostgresTemporal } from '../../../servers/temporalserver/server';

describe('the PostgreSQL-backed Temporal server', () => {
  it('refuses a taken membership port (port + 100) with the typed error, before installing or starting anything', async () => {
    // A free frontend port whose membership port (+100) another program holds.
    let port = 0;
    let blocker: net.Server | undefined;
    for (let tries = 0; blocker === undefined && tries < 20; tries++) {
      port = await freePort();
      if (port + 110 > 65535) continue;
      const b = net.createServer((socket) => socket.destroy());
      const listening = await new Promise<boolean>((resolve) => {
        b.once('error', () => resolve(false));
        b.listen(port + 100, '127.0.0.1', () => resolve(true));
      });
      if (listening) blocker = b;
    }
    if (blocker === undefined) throw new Error('found no free port pair to test with');
    const projectRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'jukebox-pg-ports-'));
    try {
      const attempt = startPostgresTemporal({
        projectRoot,
        env: { JUKEBOX_PG_TEMPORAL_ADDRESS: `127.0.0.1:${port}` },
        log: () => {},
        timeoutMs: 5_000,
      });
      await expect(attempt).rejects.toBeInstanceOf(DevServerPortTakenError);
      await expect(attempt).rejects.toThrow(
        new RegExp(`Port ${port + 100} .*JUKEBOX_PG_TEMPORAL_ADDRESS`, 's'),
      );
      // Refused before the server binaries were built or PostgreSQL was started for it.
      expect(fs.existsSync(path.join(projectRoot, '.jukebox', 'bin'))).toBe(false);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
      fs.rmSync(projectRoot, { recursive: true, force: true });
    }
  });
});
