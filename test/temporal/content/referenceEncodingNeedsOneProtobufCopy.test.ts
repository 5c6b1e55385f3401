/**
 * Why Temporal's external storage (the content store's claims) fails in an existing Temporal project, and the
 * fix `jbx init` applies: Temporal's hello-world dependencies, installed by npm from the registry, put
 * @grpc/proto-loader's protobufjs 7 at the top of node_modules and nest a copy of protobufjs 8 under each
 * @temporalio package, so @temporalio/common cannot encode a reference on @temporalio/proto's message type. The
 * warning names the copies and the command; with protobufjs 8 a dependency of the project (what `jbx init`
 * adds), npm installs one copy and the reference encodes.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { projectTemplate } from '../../../src/cli/init/template';
import {
  protobufCopies,
  ReferenceEncodingBrokenError,
} from '../../../src/temporal/content/referenceEncoding';

const ROOT = path.resolve(__dirname, '../../..');
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const versions = { ...pkg.devDependencies, ...pkg.dependencies, jukebox: '^0.1.0' };
const project = mkdtempSync(path.join(os.tmpdir(), 'jukebox-protobuf-copies-'));
afterAll(() => rmSync(project, { recursive: true, force: true }));

// What the SDK does for every offloaded payload, run in the project with the project's own packages.
const ENCODE = `
const { StorageDriverClaim } = require('@temporalio/common');
const { encodeReferencePayload } = require('@temporalio/common/lib/internal-non-workflow/extstore-helpers');
try {
  encodeReferencePayload({ driverName: 'jukebox', claim: new StorageDriverClaim({ hash: '0'.repeat(64) }), sizeBytes: 1 });
  console.log('encodes');
} catch (err) {
  console.log('fails: ' + err.message);
}
`;

/** Every installed protobufjs 8 under `dir`. */
function copiesOf8(dir: string): string[] {
  const found: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (!e.isDirectory()) continue;
    const p = path.join(dir, e.name);
    if (e.name === 'protobufjs') {
      if (JSON.parse(readFileSync(path.join(p, 'package.json'), 'utf8')).version.startsWith('8.'))
        found.push(p);
    } else if (
      e.name.startsWith('@') ||
      e.name === 'node_modules' ||
      existsSync(path.join(p, 'node_modules'))
    )
      found.push(
        ...copiesOf8(e.name.startsWith('@') || e.name === 'node_modules' ? p : path.join(p, 'node_modules')),
      );
  }
  return found.sort();
}

const npm = (args: string[]) =>
  promisify(execFile)('npm', [...args, '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], {
    cwd: project,
    env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k))),
  });
const encode = async () =>
  (await promisify(execFile)(process.execPath, ['encode.js'], { cwd: project })).stdout.trim();

describe('a Temporal project and protobufjs', () => {
  it("fails to encode a reference with hello-world's dependencies, names the two copies, and encodes once protobufjs is the project's dependency", {
    timeout: 300_000,
  }, async () => {
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'hello', private: true }));
    writeFileSync(path.join(project, 'encode.js'), ENCODE);
    const sdk = ['activity', 'client', 'worker', 'workflow'].map(
      (p) => `@temporalio/${p}@${versions[`@temporalio/${p}`]}`,
    );
    await npm(['install', ...sdk]);
    expect(await encode()).toBe('fails: type must be a Type');

    const [top, common, proto] = protobufCopies(project);
    expect(top).toMatchObject({ loadedBy: 'the project', version: expect.stringMatching(/^7\./) });
    expect(common).toMatchObject({ loadedBy: '@temporalio/common', version: expect.stringMatching(/^8\./) });
    expect(proto).toMatchObject({ loadedBy: '@temporalio/proto', version: expect.stringMatching(/^8\./) });
    expect(common!.dir).not.toBe(proto!.dir);
    const message = new ReferenceEncodingBrokenError(new Error('type must be a Type'), [
      top!,
      common!,
      proto!,
    ]).message;
    expect(message).toContain(`@temporalio/common loads protobufjs ${common!.version} from ${common!.dir}`);
    expect(message).toContain(`@temporalio/proto loads protobufjs ${proto!.version} from ${proto!.dir}`);
    expect(message).toContain(`npm install protobufjs@${pkg.dependencies.protobufjs}`);

    // The dependency jbx init writes into the project's package.json.
    const fromInit = projectTemplate('hello', versions).dependencies.protobufjs;
    expect(fromInit).toBe(pkg.dependencies.protobufjs);
    await npm(['install', `protobufjs@${fromInit}`]);
    expect(await encode()).toBe('encodes');
    // One protobufjs 8 in the tree, at the top (this process's resolution cache still holds the old layout).
    expect(copiesOf8(path.join(project, 'node_modules'))).toEqual([
      path.join(project, 'node_modules/protobufjs'),
    ]);
  });
});
