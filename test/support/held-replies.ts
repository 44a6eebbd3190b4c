/**
 * A scripted model whose replies can be held until released, by the user text they answer (to keep a turn out while
 * a connection is cut or a job is stopped). Any other text is answered `re: <text>` at once; a text starting with
 * `401` fails as a wrong API key would.
 */
import type { RecordedRequest, ScriptedReply } from '../../llm/chat-server.ts';
import { textOf } from '../../engine/messages.ts';

export interface HeldReplies {
  /** Holds the reply to `text`: `atModel` resolves when its request reaches the model, `release` lets it answer. */
  hold: (text: string) => { atModel: Promise<void>; release: () => void };
  /** Releases the reply to `text` (held before). */
  release: (text: string) => void;
  /** Releases every held reply (after the tests: no request is left waiting). */
  releaseAll: () => void;
  /** The responder for startChatServer or startHarness. */
  respond: (request: RecordedRequest) => Promise<ScriptedReply>;
}

export function heldReplies(): HeldReplies {
  const held = new Map<
    string,
    { arrived: () => void; atModel: Promise<void>; release: () => void; released: Promise<void> }
  >();
  return {
    hold: (text) => {
      let arrived!: () => void;
      let release!: () => void;
      const atModel = new Promise<void>((resolve) => (arrived = resolve));
      const released = new Promise<void>((resolve) => (release = resolve));
      held.set(text, { arrived, atModel, release, released });
      return { atModel, release };
    },
    release: (text) => {
      held.get(text)!.release();
    },
    releaseAll: () => {
      for (const { release } of held.values()) release();
    },
    respond: async (request) => {
      const text = textOf(request.body.messages.findLast((m) => m.role === 'user')?.content);
      if (text.startsWith('401')) return { status: 401, error: 'Incorrect API key provided' };
      const waiting = held.get(text);
      if (waiting) {
        waiting.arrived();
        await waiting.released;
      }
      return { content: `re: ${text}` };
    },
  };
}
