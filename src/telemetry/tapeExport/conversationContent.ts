/**
 * The redacted gen_ai JSON of each request's conversation, built once per message instead of once per message
 * per request: a 1,000-step run resends a history of up to 1,000 messages 500 times. Conversations on a tape
 * are chains of `[prev node | nil, message]` blobs (FORMAT.md, "Conversations"), so a node's JSON is its
 * predecessor's plus one message. Anything that is not such a chain goes through resolveMessages.
 */
import type { Redactor } from '../../recorder/redact';
import { BlobRef, conversationNode, derefValue, resolveMessages, type Tape } from '../../recorder/tape';
import { genAiMessageJson } from '../content';

export class ConversationContent {
  /** Chain node hash → the JSON of its messages, without the enclosing brackets. */
  private readonly byNode = new Map<string, string>();

  constructor(
    private readonly tape: Tape,
    private readonly redactor: Redactor,
  ) {}

  inputJson(conversation: unknown): string {
    if (conversation instanceof BlobRef) {
      const body = this.nodeJson(conversation);
      if (body !== undefined) return `[${body}]`;
    }
    const messages = resolveMessages(this.tape, conversation as Parameters<typeof resolveMessages>[1]);
    return `[${messages.map((m) => genAiMessageJson(m, this.redactor)).join(',')}]`;
  }

  /** undefined when the blob is not a chain node, so the caller falls back to resolveMessages. */
  private nodeJson(head: BlobRef): string | undefined {
    // Walk back to the newest node already known, then build forward: no recursion on long chains.
    const pending: BlobRef[] = [];
    let prefix = '';
    let node: BlobRef | null = head;
    while (node) {
      const known = this.byNode.get(node.hash);
      if (known !== undefined) {
        prefix = known;
        break;
      }
      const parts = conversationNode(derefValue(this.tape, node));
      if (!parts) return undefined;
      pending.push(node);
      node = parts.prev;
      if (pending.length > this.tape.blobs.size) return undefined;
    }
    for (let i = pending.length - 1; i >= 0; i--) {
      const n = pending[i]!;
      const message = derefValue(this.tape, conversationNode(derefValue(this.tape, n))!.message);
      const json = genAiMessageJson(message, this.redactor);
      prefix = prefix ? `${prefix},${json}` : json;
      this.byNode.set(n.hash, prefix);
    }
    return prefix;
  }
}
