/** What the detectors compare about one message. Computed in an activity; compared in the workflow. */
export interface CodeShape {
  lang: 'typescript' | 'python';
  /** Hash of the normalized syntax tree: equal for programs that differ only in names, literals, layout. */
  hash: string;
  /** Hashed 4-grams of the normalized node sequence, sorted and unique, for near-equal programs. */
  grams: number[];
  tokens: number;
}

export interface MessageFeatures {
  /** First characters of the message, for evidence. */
  excerpt: string;
  /** Hash of the normalized text when it is at least minChars long. */
  exactKey?: string;
  /** Hash of name + canonical arguments (keys sorted, scalar arrays sorted) of each tool call. */
  toolKeys: string[];
  toolExcerpts: string[];
  /** Local embedder: hashed character 3-gram counts of the normalized text (TF; IDF is taken over the window). */
  ngrams?: Record<string, number>;
  /** Sentence embedding (local model or remote endpoint), L2-normalized by the local model. */
  embedding?: number[];
  /**
   * The message makes tool calls, so the detectors do not compare its own meaning: its embedding is only needed
   * once a later message is compared with it, and comes back with the run's next model step
   * (`DeferredEmbedding`), which fills it in before that step's message is checked.
   */
  embeddingDeferred?: true;
  codeShapes: CodeShape[];
  /** Set when the embedder (or the code parser) failed: the semantic detector fell back to the n-grams. */
  degraded?: string;
  /**
   * `degraded` is only a standing condition of the worker (its local embedding model cannot load), which the
   * worker logged once for the process: the workflow does not repeat it for every step.
   */
  degradedLogged?: true;
}

/** A message between agents, or a model reply, as the breaker sees it. */
export interface BreakerMessage {
  text: string;
  toolCalls?: { name: string; arguments: Record<string, unknown> }[];
}

/** The embedding of an earlier message that deferred it, as a later model step returns it. */
export interface DeferredEmbedding {
  /** The step whose answer deferred it. */
  step: number;
  embedding?: number[];
  /** Set when the embedder failed: the message keeps only its n-grams. */
  degraded?: string;
  /** As MessageFeatures.degradedLogged. */
  degradedLogged?: true;
}
