import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ensureComposeValidator } from '../../servers/composespec';
import { TEMPORAL_CLI_VERSION } from '../../servers/devserver';
import { VERSITYGW_PACKAGE, VERSITYGW_VERSION } from '../../servers/objectserver';
import { DEFAULT_PG_TEMPORAL_ADDRESS, TEMPORAL_SERVER_VERSION } from '../../servers/temporalserver';

const ROOT = path.resolve(__dirname, '../..');
const read = (f: string) => readFileSync(path.join(ROOT, f), 'utf8');

interface Service {
  image?: string;
  build?: { context: string; target?: string };
  environment?: Record<string, string>;
  command?: string[];
  volumes?: string[];
  security_opt?: string[];
  depends_on?: string[] | Record<string, unknown>;
}

const dependsOn = (s: Service): Record<string, unknown> =>
  Array.isArray(s.depends_on) ? Object.fromEntries(s.depends_on.map((d) => [d, {}])) : (s.depends_on ?? {});
const compose = parse(read('docker-compose.yml'), { merge: true }) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
};
const dockerfile = read('Dockerfile');

/** Every TypeScript source of the project (not tests, not dependencies), as one text to search names in. */
function projectSources(): string {
  const skip = new Set(['node_modules', 'test', '.git', '.jukebox', 'bench']);
  const texts: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (skip.has(e.name)) continue;
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts')) texts.push(readFileSync(p, 'utf8'));
    }
  };
  walk(ROOT);
  return texts.join('\n');
}

/** Where variables that no project file reads are read: the library that reads each, to search in. */
const READ_BY_LIBRARY: Record<string, string> = {
  AWS_ACCESS_KEY_ID: 'node_modules/@aws-sdk/credential-provider-env/dist-cjs/index.js',
  AWS_SECRET_ACCESS_KEY: 'node_modules/@aws-sdk/credential-provider-env/dist-cjs/index.js',
};

const ourServices = Object.entries(compose.services).filter(([, s]) => s.build?.target === 'worker');

describe('docker-compose.yml and the Dockerfile', () => {
  it('pin the image versions the code pins', () => {
    const tag = (service: string) =>
      /:\$\{[A-Z_]+:-([^}]+)\}$|:([^:$]+)$/.exec(compose.services[service]!.image!);
    const [, temporalDefault] = tag('temporal')!;
    expect(temporalDefault).toBe(TEMPORAL_SERVER_VERSION.slice(1));
    // The UI of the pinned CLI's dev server: the CLI's go.mod names its ui-server release.
    const cliMod = spawnSync(
      'go',
      ['mod', 'download', '-json', `github.com/temporalio/cli@${TEMPORAL_CLI_VERSION}`],
      {
        encoding: 'utf8',
      },
    );
    expect(cliMod.status).toBe(0);
    const goMod = readFileSync(JSON.parse(cliMod.stdout).GoMod, 'utf8');
    const [, uiDefault] = tag('temporal-ui')!;
    expect(goMod).toContain(`github.com/temporalio/ui-server/v2 v${uiDefault}`);
    expect(goMod).toContain(`go.temporal.io/server ${TEMPORAL_SERVER_VERSION}`);

    // Node of the worker image: the major the project runs on and declares.
    const node = /^FROM node:(\d+)-[\w-]+ AS worker$/m.exec(dockerfile);
    expect(node?.[1]).toBe(process.versions.node.split('.')[0]);
    expect(JSON.parse(read('package.json')).engines.node).toMatch(new RegExp(`^>=${node?.[1]}\\b`));

    // The S3 gateway: compose builds the release the tests install, with a Go its module accepts.
    expect(dockerfile).toContain(`RUN go install ${VERSITYGW_PACKAGE}@${VERSITYGW_VERSION}\n`);
    const gwMod = spawnSync(
      'go',
      ['mod', 'download', '-json', `github.com/versity/versitygw@${VERSITYGW_VERSION}`],
      {
        encoding: 'utf8',
      },
    );
    expect(gwMod.status).toBe(0);
    const needs = /^go (\d+)\.(\d+)/m.exec(readFileSync(JSON.parse(gwMod.stdout).GoMod, 'utf8'))!;
    const go = /^FROM golang:(\d+)\.(\d+)-\w+ AS objectstore-build$/m.exec(dockerfile)!;
    expect(Number(go[1]) * 100 + Number(go[2])).toBeGreaterThanOrEqual(
      Number(needs[1]) * 100 + Number(needs[2]),
    );
    expect(compose.services.objectstore!.build).toEqual({ context: '.', target: 'objectstore' });

    // The Temporal-on-PostgreSQL test project and the server module agree on the default address.
    const projectDefault = /JUKEBOX_PG_TEMPORAL_ADDRESS\?\.trim\(\) \|\| '([^']+)'/.exec(
      read('vitest.config.ts'),
    );
    expect(projectDefault?.[1]).toBe(DEFAULT_PG_TEMPORAL_ADDRESS);
  });

  it('name only environment variables that Jukebox or its libraries read', () => {
    const sources = projectSources();
    const names = new Set<string>();
    for (const [, s] of ourServices) for (const k of Object.keys(s.environment ?? {})) names.add(k);
    for (const m of dockerfile.matchAll(/^ENV (.+)$/gm))
      for (const kv of m[1]!.split(/\s+/)) names.add(kv.split('=')[0]!);
    expect([...names]).toEqual(
      expect.arrayContaining([
        'JUKEBOX_TAPE_STORE',
        'JUKEBOX_S3_ENDPOINT',
        'JUKEBOX_TEMPORAL_ADDRESS',
        'JUKEBOX_TAPE_DIR',
      ]),
    );
    const unread = [...names].filter((name) => {
      const library = READ_BY_LIBRARY[name];
      if (library) return !readFileSync(path.join(ROOT, library), 'utf8').includes(name);
      // Read as env.NAME / process.env.NAME / env['NAME'] somewhere in the project.
      return !new RegExp(`env(\\.${name}\\b|\\[['"]${name}['"]\\])`).test(sources);
    });
    expect(unread).toEqual([]);
  });

  it('gives the worker image the booth sandbox, a tape volume, and the accounting quickstart', () => {
    expect(dockerfile).toMatch(/apt-get install[^\n]*\bbubblewrap\b/);
    const worker = compose.services['jukebox-worker']!;
    expect(worker.volumes).toContain('tapes:/var/lib/jukebox/tapes');
    expect(dockerfile).toMatch(/^ENV JUKEBOX_TAPE_DIR=\/var\/lib\/jukebox\/tapes$/m);
    expect(worker.security_opt).toEqual(['seccomp:unconfined', 'apparmor:unconfined']);
    expect(worker.environment!.JUKEBOX_TAPE_STORE).toMatch(/^s3:\/\/[a-z0-9-]+\/.*\/$/);
    expect(compose.services['accounting-quickstart']!.command).toEqual([
      'npx',
      'tsx',
      'scripts/quickstart.ts',
    ]);
    for (const [, s] of ourServices) {
      const script = s.command?.find((c) => c.endsWith('.ts'));
      if (script) expect(existsSync(path.join(ROOT, script))).toBe(true);
    }
  });

  it('starts the S3 gateway with flags and a backend the pinned versitygw accepts', () => {
    const binary = path.join(ROOT, '.jukebox/bin', `versitygw-${VERSITYGW_VERSION}`, 'versitygw');
    // scripts/test.sh installs it before vitest runs.
    expect(existsSync(binary)).toBe(true);
    const flagsOf = (args: string[]) => {
      const help = spawnSync(binary, [...args, '--help'], { encoding: 'utf8' });
      return new Set([...`${help.stdout}${help.stderr}`.matchAll(/^\s+--([\w-]+)/gm)].map((m) => m[1]));
    };
    const command = compose.services.objectstore!.command!;
    const backend = command.findIndex((a, i) => !a.startsWith('-') && !command[i - 1]?.startsWith('--'));
    expect(command[backend]).toBe('posix');
    const unknown = [
      ...command.slice(0, backend).filter((a) => a.startsWith('--') && !flagsOf([]).has(a.slice(2))),
      ...command.slice(backend + 1).filter((a) => a.startsWith('--') && !flagsOf(['posix']).has(a.slice(2))),
    ];
    expect(unknown).toEqual([]);
    expect(flagsOf([]).has('port')).toBe(true);
    // Its credentials come from the variables versitygw reads for its root account.
    expect(Object.keys(compose.services.objectstore!.environment!)).toEqual([
      'ROOT_ACCESS_KEY_ID',
      'ROOT_SECRET_ACCESS_KEY',
    ]);
    const help = spawnSync(binary, ['--help'], { encoding: 'utf8' }).stdout;
    expect(help).toContain('$ROOT_ACCESS_KEY_ID');
    expect(help).toContain('$ROOT_SECRET_ACCESS_KEY');
  });

  it('is a valid compose file by the Compose Specification, checked in every run without Docker', async () => {
    // compose-go's validator, the loader `docker compose config` runs, built from the Go module proxy
    // (scripts/test.sh installs it first; a machine that cannot build it fails here, it does not skip).
    const validator = await ensureComposeValidator();
    const r = spawnSync(validator, ['--format', 'json', path.join(ROOT, 'docker-compose.yml')], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '' },
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    // What the loader made of it: the services, and the pinned tags after interpolation of their defaults.
    const model = JSON.parse(r.stdout) as { name: string; services: Record<string, Service> };
    expect(model.name).toBe('jukebox');
    expect(Object.keys(model.services).sort()).toEqual(Object.keys(compose.services).sort());
    expect(model.services.temporal!.image).toBe(`temporalio/auto-setup:${TEMPORAL_SERVER_VERSION.slice(1)}`);
    // Every service a service waits for exists (the loader checks the schema, not the references).
    for (const [name, s] of Object.entries(compose.services))
      for (const dep of Object.keys(dependsOn(s)))
        expect(Object.keys(compose.services), `${name} depends on ${dep}`).toContain(dep);
  }, 300_000);

  it('the validator refuses a file that breaks the specification, naming the place', async () => {
    const validator = await ensureComposeValidator();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'jbx-compose-'));
    try {
      const bad = path.join(dir, 'docker-compose.yml');
      writeFileSync(bad, 'services:\n  worker:\n    image: node:20\n    restart_policy: always\n');
      const r = spawnSync(validator, [bad], {
        cwd: dir,
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '' },
      });
      expect(r.status).toBe(1);
      expect(r.stderr.trim()).toBe(
        `failed to load project: validating ${bad}: services.worker.restart_policy false schema`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
