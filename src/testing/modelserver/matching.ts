import type { LoadedScript, ScriptProvider, ScriptTurn, TurnMatch } from './script';

/** What turn matching needs to know about a request, whichever API it came through. */
export interface ModelRequest {
  provider: ScriptProvider;
  model: string;
  stream: boolean;
  /** Text of the last message a user (not a tool) wrote; undefined when there is none. */
  lastUser: string | undefined;
  /** Text of the last tool result anywhere in the conversation; undefined when there is none. */
  toolResult: string | undefined;
  /** Characters of prompt text, for the default token estimate. */
  promptChars: number;
}

export interface SelectedTurn {
  turn: ScriptTurn;
  turnId: string;
}

/** Why a turn does not answer a request, or undefined when it does. */
function mismatch(match: TurnMatch | undefined, req: ModelRequest): string | undefined {
  if (!match) return undefined;
  if (match.provider !== undefined && match.provider !== req.provider)
    return `wants provider ${match.provider}`;
  if (match.model !== undefined && match.model !== req.model)
    return `wants model ${JSON.stringify(match.model)}`;
  if (match.lastUser !== undefined && !req.lastUser?.includes(match.lastUser))
    return `wants lastUser containing ${JSON.stringify(match.lastUser)}`;
  if (match.toolResult !== undefined && !req.toolResult?.includes(match.toolResult))
    return `wants toolResult containing ${JSON.stringify(match.toolResult)}`;
  return undefined;
}

function quote(text: string | undefined): string {
  if (text === undefined) return '(none)';
  return JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}...` : text);
}

export const turnIdOf = (turn: ScriptTurn, index: number): string => turn.id ?? `turns[${index}]`;

/** The turns of one script and which of them have been used up. */
export class TurnBook {
  private readonly consumed = new Set<number>();

  constructor(readonly loaded: LoadedScript) {}

  /** Picks the first unused turn in file order whose match holds, and uses it up unless it repeats. */
  take(req: ModelRequest): SelectedTurn | undefined {
    const turns = this.loaded.script.turns;
    for (let i = 0; i < turns.length; i++) {
      const turn = turns[i]!;
      if (this.consumed.has(i) || mismatch(turn.match, req) !== undefined) continue;
      if (!turn.repeat) this.consumed.add(i);
      return { turn, turnId: turnIdOf(turn, i) };
    }
    return undefined;
  }

  remainingIds(): string[] {
    return this.loaded.script.turns.flatMap((t, i) => (this.consumed.has(i) ? [] : [turnIdOf(t, i)]));
  }

  /** The whole story of a request no turn answers, so a failing test explains itself. */
  explainNoMatch(req: ModelRequest): string {
    const { name, source } = this.loaded;
    const remaining = this.loaded.script.turns.flatMap((t, i) =>
      this.consumed.has(i) ? [] : [`${turnIdOf(t, i)} (${mismatch(t.match, req) ?? 'matches'})`],
    );
    const used = this.loaded.script.turns.length - remaining.length;
    return (
      `Model script "${name}" (${source}): no turn matched this ${req.provider} request. ` +
      `model: ${JSON.stringify(req.model)}; last user message: ${quote(req.lastUser)}; ` +
      `last tool result: ${quote(req.toolResult)}. ` +
      `Remaining turns: ${remaining.length ? remaining.join(', ') : '(none)'}` +
      `${used ? `; ${used} turn(s) already used (a turn is used once unless repeat: true)` : ''}. ` +
      'Add a turn whose match holds for this request, or loosen a match.'
    );
  }
}
