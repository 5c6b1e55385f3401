/**
 * Global setup shared by both test projects: one content store folder for the whole run. Test workers record
 * into temporary tape folders of their own while clients (startAgent, the CLI) read results from the store the
 * environment names; JUKEBOX_CONTENT_DIR makes both the same folder, as one deployment's environment would.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export default function setup(): () => void {
  if (process.env.JUKEBOX_CONTENT_DIR) return () => {};
  const dir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-test-content-'));
  process.env.JUKEBOX_CONTENT_DIR = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}
