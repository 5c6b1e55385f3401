/**
 * The server's static configuration (its `config/<env>.yaml`) and dynamic configuration, written as JSON:
 * YAML is a superset of JSON, so the server's YAML loader reads it and no YAML writer is needed.
 */
import { servicePorts } from './config';
import { TEMPORAL_DATABASES } from './schema';

export function serverConfig(o: {
  host: string;
  port: number;
  postgresPort: number;
  dynamicConfigFile: string;
}) {
  const ports = servicePorts(o.port);
  const datastore = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `127.0.0.1:${o.postgresPort}`,
      connectProtocol: 'tcp',
      user: 'postgres',
      password: '',
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const rpc = (p: { grpc: number; membership: number; http?: number }) => ({
    rpc: {
      grpcPort: p.grpc,
      membershipPort: p.membership,
      bindOnIP: o.host,
      ...(p.http ? { httpPort: p.http } : {}),
    },
  });
  return {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'default',
      visibilityStore: 'visibility',
      numHistoryShards: 4,
      datastores: {
        default: datastore(TEMPORAL_DATABASES.default, 20),
        visibility: datastore(TEMPORAL_DATABASES.visibility, 10),
      },
    },
    global: { membership: { maxJoinDuration: '30s', broadcastAddress: o.host } },
    services: {
      frontend: rpc(ports.frontend),
      history: rpc(ports.history),
      matching: rpc(ports.matching),
      worker: rpc(ports.worker),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: {
          enabled: true,
          initialFailoverVersion: 1,
          rpcName: 'frontend',
          rpcAddress: `${o.host}:${o.port}`,
        },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: o.dynamicConfigFile, pollInterval: '10s' },
  };
}

/** Dynamic config: the upstream development-sql settings Jukebox relies on (long ids, fresh search attributes). */
export function dynamicConfig() {
  const one = (value: unknown) => [{ value, constraints: {} }];
  return {
    'limit.maxIDLength': one(255),
    'system.forceSearchAttributesCacheRefreshOnRead': one(true),
    'frontend.enableExecuteMultiOperation': one(true),
    'frontend.enableUpdateWorkflowExecution': one(true),
    'history.enableTransitionHistory': one(true),
    // A namespace registered at start must be usable within a second, not the default ten.
    'system.namespaceCacheRefreshInterval': one('1s'),
  };
}
