import { Client, type Connection } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { type ContentOptions, jukeboxDataConverter } from '../content/dataConverter';

/**
 * A Temporal client that reads and writes payloads through the runs' content store, as Jukebox's workers do: a
 * run's input, result, queries and signals past the threshold are claims in the history.
 */
export function jukeboxClient(
  connection: Connection | NativeConnection,
  namespace: string,
  content: ContentOptions = {},
): Client {
  return new Client({ connection, namespace, dataConverter: jukeboxDataConverter(content) });
}
