/**
 * A check, once per process, that Temporal's external storage can encode a claim here. The SDK encodes its
 * ExternalStorageReference with @temporalio/common's protobufjs, on a message type of @temporalio/proto's. In a
 * project whose top-level protobufjs is a 7.x (a Temporal project has @grpc/proto-loader's; OpenTelemetry's
 * exporters bring another), npm nests a separate copy of protobufjs 8 under each @temporalio package, and every
 * offloaded payload fails with "type must be a Type" deep in a worker's task handling. This finds it once, at
 * worker start, where the worker can say which copies and how to get one, and keep payloads in the history as
 * Temporal does without the content store, instead of failing steps one by one.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { StorageDriverClaim } from '@temporalio/common';
import { encodeReferencePayload } from '@temporalio/common/lib/internal-non-workflow/extstore-helpers';
import { crossRealmError, JukeboxError } from '../../errors';

/** Where a package resolves protobufjs from, and which version that is. */
export interface ProtobufCopy {
  /** The package that loads it: @temporalio/common, @temporalio/proto, or the project itself. */
  loadedBy: string;
  dir: string;
  version: string;
}

function copyFrom(loadedBy: string, fromDir: string): ProtobufCopy | undefined {
  try {
    const pkg = require.resolve('protobufjs/package.json', { paths: [fromDir] });
    return { loadedBy, dir: path.dirname(pkg), version: JSON.parse(readFileSync(pkg, 'utf8')).version };
  } catch {
    return undefined;
  }
}

const packageDir = (name: string, fromDir: string) =>
  path.dirname(require.resolve(`${name}/package.json`, { paths: [fromDir] }));

/**
 * The protobufjs copies that matter: the project's top-level one (resolved from `projectDir`), the one
 * @temporalio/common loads (the common in `commonDir`, default: the one the project resolves) and the one its
 * @temporalio/proto loads. Encoding works when the last two are one.
 */
export function protobufCopies(projectDir: string, commonDir?: string): ProtobufCopy[] {
  const copies: ProtobufCopy[] = [];
  const top = copyFrom('the project', projectDir);
  if (top) copies.push(top);
  try {
    const common = commonDir ?? packageDir('@temporalio/common', projectDir);
    const ofCommon = copyFrom('@temporalio/common', common);
    if (ofCommon) copies.push(ofCommon);
    const ofProto = copyFrom('@temporalio/proto', packageDir('@temporalio/proto', common));
    if (ofProto) copies.push(ofProto);
  } catch {
    // No @temporalio/common resolvable from there: nothing to compare.
  }
  return copies;
}

/** The version jukebox itself is built with, for the command that fixes the layout. */
function ownProtobufVersion(): string {
  try {
    const own = JSON.parse(readFileSync(path.join(__dirname, '../../../package.json'), 'utf8'));
    return own.dependencies?.protobufjs ?? '8';
  } catch {
    return '8';
  }
}

export class ReferenceEncodingBrokenError extends JukeboxError {
  constructor(
    cause: unknown,
    // The @temporalio/common this process loaded, and the project it runs in.
    readonly copies: ProtobufCopy[] = protobufCopies(
      process.cwd(),
      path.dirname(require.resolve('@temporalio/common/package.json')),
    ),
  ) {
    const listed = copies.map((c) => `${c.loadedBy} loads protobufjs ${c.version} from ${c.dir}`).join('; ');
    super(
      'CONTENT_REFERENCE_ENCODING_BROKEN',
      `Temporal's external storage cannot encode a payload reference in this install (${(cause as Error)?.message ?? String(cause)}): ` +
        `@temporalio/common and @temporalio/proto load different copies of protobufjs${listed ? ` (${listed})` : ''}. ` +
        'npm nests a copy of protobufjs 8 under each @temporalio package when the top of node_modules holds a 7.x ' +
        "(@grpc/proto-loader's, OpenTelemetry's). Make protobufjs 8 a dependency of your project, so that npm " +
        `installs one copy at the top for all of them: npm install protobufjs@${ownProtobufVersion()} (\`jbx init\` ` +
        "adds it), or run `npm ci` if this project's lockfile already has it. Until then payloads stay in the " +
        'workflow history, as without the content store.',
      { cause, nonRetryable: true },
    );
  }
}
crossRealmError('ReferenceEncodingBrokenError', ReferenceEncodingBrokenError);

let checked: ReferenceEncodingBrokenError | null | undefined;

/** The reason this process cannot offload payloads, or null when it can. */
export function referenceEncodingProblem(): ReferenceEncodingBrokenError | null {
  if (checked === undefined) {
    try {
      encodeReferencePayload({
        driverName: 'jukebox',
        claim: new StorageDriverClaim({ hash: '0'.repeat(64) }),
        sizeBytes: 1,
      });
      checked = null;
    } catch (err) {
      checked = new ReferenceEncodingBrokenError(err);
    }
  }
  return checked;
}
