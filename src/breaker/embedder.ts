import OpenAI from 'openai';
import type { EmbedderConfig } from './config';
import { embeddingModelDir, LocalModelEmbedder } from './localEmbedder';

/** A sentence embedder for the semantic detector; without one it compares character 3-gram TF-IDF (textKeys.ts). */
export interface Embedder {
  readonly name: string;
  /**
   * `background`: nobody waits for this one yet (a deferred embedding); an embedder that can run it at a lower
   * priority does, so it takes no CPU from the steps that are running.
   */
  embed(text: string, signal?: AbortSignal, options?: { background?: boolean }): Promise<number[]>;
}

/** Any OpenAI-compatible /v1/embeddings endpoint (OpenAI itself, vLLM, Ollama, LM Studio, ...). */
export class OpenAICompatibleEmbedder implements Embedder {
  readonly name: string;
  private readonly client: OpenAI;

  constructor(
    private readonly options: { baseURL: string; model: string; apiKey?: string; timeoutMs?: number },
  ) {
    this.name = `${options.model} at ${options.baseURL}`;
    // Retries would stall the breaker; a failed embedding degrades the semantic detector instead.
    this.client = new OpenAI({
      baseURL: options.baseURL,
      apiKey: options.apiKey ?? 'unused',
      maxRetries: 0,
      timeout: options.timeoutMs ?? 10_000,
    });
  }

  async embed(text: string, signal?: AbortSignal): Promise<number[]> {
    const res = await this.client.embeddings.create({ model: this.options.model, input: text }, { signal });
    const vector = res.data[0]?.embedding;
    if (!Array.isArray(vector) || vector.length === 0)
      throw new Error(`the embeddings endpoint ${this.name} answered without an embedding`);
    return vector;
  }
}

/** The embedder a config asks for, or undefined for n-grams only. */
export function createEmbedder(
  config: EmbedderConfig,
  env: NodeJS.ProcessEnv = process.env,
): Embedder | undefined {
  if (config.kind === 'ngram') return undefined;
  if (config.kind === 'local') return new LocalModelEmbedder(config.modelDir ?? embeddingModelDir(env));
  const apiKey = config.apiKeyEnv ? env[config.apiKeyEnv] : undefined;
  return new OpenAICompatibleEmbedder({
    baseURL: config.baseURL,
    model: config.model,
    ...(apiKey ? { apiKey } : {}),
  });
}
