import { type ModelRequest, type SelectedTurn, TurnBook } from './matching';
import type { LoadedScript, ScriptProvider } from './script';

export interface ServedTurn {
  turnId: string;
  provider: ScriptProvider;
  streamed: boolean;
}

/**
 * The script being served and what has happened under it. Counts exist so tests can prove which model steps
 * went live and which were replayed from history without asking the model again.
 */
export class ScriptSession {
  private book: TurnBook;
  private requests = 0;
  private served: ServedTurn[] = [];
  // Never reset: ids stay unique across script reloads, as a real API's would.
  private sequence = 0;
  /** Requests waiting out a scripted pause (before or between chunks) right now; live, not reset with the script. */
  pausing = 0;

  constructor(loaded: LoadedScript) {
    this.book = new TurnBook(loaded);
  }

  get scriptName(): string {
    return this.book.loaded.name;
  }

  load(loaded: LoadedScript): void {
    this.book = new TurnBook(loaded);
    this.requests = 0;
    this.served = [];
  }

  /** Same script, every turn unused again, counts back to zero. */
  reset(): void {
    this.load(this.book.loaded);
  }

  /** Counts every API request, including malformed and unmatched ones: each is a call the model would bill. */
  countRequest(): number {
    this.requests++;
    return ++this.sequence;
  }

  take(req: ModelRequest): SelectedTurn | undefined {
    const selected = this.book.take(req);
    if (selected) this.served.push({ turnId: selected.turnId, provider: req.provider, streamed: req.stream });
    return selected;
  }

  explainNoMatch(req: ModelRequest): string {
    return this.book.explainNoMatch(req);
  }

  requestCount(): number {
    return this.requests;
  }

  servedTurns(): ServedTurn[] {
    return this.served.map((t) => ({ ...t }));
  }

  stats() {
    return {
      script: this.scriptName,
      requests: this.requests,
      served: this.servedTurns(),
      remaining: this.book.remainingIds(),
      pausing: this.pausing,
    };
  }
}
