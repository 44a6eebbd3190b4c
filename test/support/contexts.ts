/**
 * Builds working contexts (message metadata) for engine tests: a fluent builder with explicit token and character
 * counts, so each test states its numbers.
 */
import type { MessageKind, MessageMeta } from '../../engine/messages.ts';
import { planCompaction } from '../../engine/planner/index.ts';
import type { Plan, PlanInput } from '../../engine/planner/index.ts';
import type { CompactionPolicy } from '../../engine/policy.ts';
import { NO_COOLDOWN } from '../../engine/trigger.ts';

export class ContextBuilder {
  readonly messages: MessageMeta[] = [];
  private seq = 0;
  private calls = 0;

  private add(meta: Omit<MessageMeta, 'id' | 'key'> & { kind?: MessageKind }): MessageMeta {
    const id = `m${String(++this.seq).padStart(6, '0')}`;
    const message: MessageMeta = { id, key: `agents/t/messages/${id}.json`, ...meta };
    if (message.kind === 'normal') delete message.kind;
    this.messages.push(message);
    return message;
  }

  system(tokens = 100, chars = tokens * 4): this {
    this.add({ role: 'system', tokens, chars });
    return this;
  }

  user(tokens = 50, chars = tokens * 4): this {
    this.add({ role: 'user', tokens, chars });
    return this;
  }

  summary(tokens = 300): this {
    this.add({ role: 'user', tokens, chars: tokens * 4, kind: 'summary' });
    return this;
  }

  /** A summary in its place (AgentScope Java's strategies 1 and 4): an assistant message of kind summary. */
  summaryInPlace(tokens = 200): this {
    this.add({ role: 'assistant', tokens, chars: tokens * 4, kind: 'summary' });
    return this;
  }

  /** longrun's task ledger message (a summary brought it). */
  ledger(tokens = 100): this {
    this.add({ role: 'user', tokens, chars: tokens * 4, kind: 'ledger' });
    return this;
  }

  reply(tokens = 80, chars = tokens * 4): this {
    this.add({ role: 'assistant', tokens, chars });
    return this;
  }

  /**
   * An assistant message (30 tokens) calling `results.length` tools, each answered with that many tokens
   * (characters 4× the tokens, or `[tokens, chars]`).
   */
  tools(...results: (number | [tokens: number, chars: number])[]): this {
    const ids = results.map(() => `call_${++this.calls}`);
    this.add({ role: 'assistant', tokens: 30, chars: 0, toolCallIds: ids });
    results.forEach((result, i) => {
      const [tokens, chars] = typeof result === 'number' ? [result, result * 4] : result;
      this.add({ role: 'tool', tokens, chars, toolCallId: ids[i] });
    });
    return this;
  }

  /** `n` turns of user, one tool call with a `toolTokens` result, reply. */
  turns(n: number, toolTokens = 500): this {
    for (let i = 0; i < n; i++) this.user().tools(toolTokens).reply();
    return this;
  }

  get tokens(): number {
    return this.messages.reduce((sum, m) => sum + m.tokens, 0);
  }

  ids(): string[] {
    return this.messages.map((m) => m.id);
  }
}

export const context = () => new ContextBuilder();

/**
 * A system prompt and the goal, `steps` tool calls (600-token results), the answer; then `chat` exchanges: an old run
 * of tool calls (AgentScope Java's strategy 1).
 */
export function toolRunThenChat(steps: number, chat: number): ContextBuilder {
  const c = context().system().user();
  for (let i = 0; i < steps; i++) c.tools(600);
  c.reply();
  for (let i = 0; i < chat; i++) c.user().reply();
  return c;
}

/**
 * The plan for `c` under `policy` at `window`: an automatic compaction with no cooldown, a summary model, the first
 * user message as the goal, the pace of a first compaction (the calls it took to fill the context: one per assistant
 * message, as the workflow counts them), and `extra` on top.
 */
export function planFor(
  c: ContextBuilder,
  policy: CompactionPolicy,
  window: number,
  extra: Partial<PlanInput> = {},
): Plan {
  return planCompaction({
    context: c.messages,
    policy,
    window,
    fixedTokens: 0,
    trigger: 'auto',
    cooldown: NO_COOLDOWN,
    summarizer: 'available',
    goalId: c.messages.find((m) => m.role === 'user')!.id,
    callsSinceCompaction: callsOf(c),
    ...extra,
  });
}

/** The model calls that made `c`: one per assistant message (the pace the workflow passes at a first compaction). */
export const callsOf = (c: ContextBuilder): number => c.messages.filter((m) => m.role === 'assistant').length;
