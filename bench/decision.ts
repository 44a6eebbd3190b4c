/**
 * The per-turn decision at 2,000 messages: incremental (count the new message once, add it to the running totals,
 * compare with the gate) against a full recount of the context, in one run; and the planner over the same context.
 */
import { performance } from 'node:perf_hooks';
import type { ChatMessage, MessageMeta } from '../engine/messages.ts';
import { planCompaction } from '../engine/planner/index.ts';
import { MAX_CONTEXT_MESSAGES } from '../engine/policy.ts';
import { resolvePolicy } from '../engine/presets.ts';
import { countMessage, loadTokenCounter } from '../engine/tokens.ts';
import { gateOf } from '../engine/gates.ts';
import { compactionDue } from '../engine/trigger.ts';
import type { ContextStats } from '../engine/trigger.ts';
import { mixedMessages } from './corpus.ts';

const MESSAGES = 2_000;
const WINDOW = 1_047_576; // gpt-4.1: 2,000 varied messages fit without compacting

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export async function benchDecision(log: (line: string) => void) {
  const counter = await loadTokenCounter('o200k_base');
  const texts = mixedMessages(2_000_000, 7).slice(0, MESSAGES + 200);
  const roles = ['user', 'assistant'] as const;
  const chat: ChatMessage[] = texts.map((content, i) => ({ role: roles[i % 2]!, content }));
  const history = chat.slice(0, MESSAGES);
  const fresh = chat.slice(MESSAGES);
  const policy = resolvePolicy({ maxMessages: MAX_CONTEXT_MESSAGES }); // 2,000 messages: the limit not passed
  const gate = gateOf(policy, WINDOW);
  const meta: MessageMeta[] = history.map((m, i) => ({
    id: `m${i}`,
    role: m.role,
    tokens: countMessage(counter, m),
    chars: m.content!.length,
    key: `k${i}`,
  }));
  const stats: ContextStats = {
    tokens: meta.reduce((sum, m) => sum + m.tokens, 0),
    messages: MESSAGES,
    turns: MESSAGES / 2,
  };

  const incremental: number[] = [];
  for (const message of fresh) {
    const start = performance.now();
    const tokens = countMessage(counter, message);
    const next = { tokens: stats.tokens + tokens, messages: stats.messages + 1, turns: stats.turns + 1 };
    compactionDue(gate, next, true);
    incremental.push((performance.now() - start) * 1_000);
  }
  const recount: number[] = [];
  for (let run = 0; run < 10; run++) {
    const view = [...history.slice(run + 1), fresh[run]!];
    const start = performance.now();
    const tokens = view.reduce((sum, m) => sum + countMessage(counter, m), 0);
    compactionDue(gate, { tokens, messages: view.length, turns: view.length / 2 }, true);
    recount.push((performance.now() - start) * 1_000);
  }
  // Plans are timed warm, as a worker makes them over an agent's life (the first ones also compile the code).
  const timePlans = (context: MessageMeta[]) => {
    const times: number[] = [];
    for (let run = -10; run < 20; run++) {
      const start = performance.now();
      planCompaction({
        context,
        policy,
        window: WINDOW,
        fixedTokens: 0,
        trigger: 'forced',
        cooldown: { consecutive: 0, lastTokensAfter: 0 },
        summarizer: 'available',
        goalId: 'm0',
      });
      if (run >= 0) times.push((performance.now() - start) * 1_000);
    }
    return median(times);
  };
  const planUsAt2000 = timePlans(meta);
  // The same 2,000 messages as an agent loop: one user message, then steps of a tool call and its result.
  const planLoopUsAt2000 = timePlans(
    meta.map((m, i) =>
      i === 0
        ? { ...m, role: 'user' }
        : i % 2 === 1
          ? { ...m, role: 'assistant', toolCallIds: [`call${i}`] }
          : { ...m, role: 'tool', toolCallId: `call${i - 1}` },
    ),
  );
  const usAt2000 = median(incremental);
  const fullRecountUsAt2000 = median(recount);
  log(
    `per-turn decision at ${MESSAGES} messages: ${usAt2000.toFixed(1)} µs incremental vs ` +
      `${(fullRecountUsAt2000 / 1_000).toFixed(1)} ms full recount (${(fullRecountUsAt2000 / usAt2000).toFixed(0)}×); ` +
      `a full plan ${(planUsAt2000 / 1_000).toFixed(2)} ms (chat), ${(planLoopUsAt2000 / 1_000).toFixed(2)} ms (one ` +
      'turn of tool steps)',
  );
  return { usAt2000, fullRecountUsAt2000, planUsAt2000, planLoopUsAt2000, speedup: fullRecountUsAt2000 / usAt2000 };
}
