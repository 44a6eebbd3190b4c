/**
 * The coverage invariant (engine/coverage.ts) over random histories: every plan, carried out, keeps or removes each
 * message of its context exactly once; and a conversation whose compactions are prepared in the background while
 * the agent goes on (random interleavings of steps, user messages, failed turns and commits) holds every stored
 * message exactly once, in its context or in what a compaction removed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyPlan } from '../../../engine/apply.ts';
import { compactionCoverage, contextCoverage } from '../../../engine/coverage.ts';
import type { MessageMeta } from '../../../engine/messages.ts';
import { kindOf } from '../../../engine/messages.ts';
import { planCompaction } from '../../../engine/planner/index.ts';
import type { Plan, PlanInput } from '../../../engine/planner/index.ts';
import { resolvePolicy } from '../../../engine/presets.ts';
import { gateOf } from '../../../engine/gates.ts';
import { messageIdOf, seqOf } from '../../../contract/keys.ts';
import type { CompactionEventSummary } from '../../../contract/results.ts';
import type { ContextRecord } from '../../../contract/records.ts';
import { Conversation } from '../../../workflows/conversation.ts';
import type { Snapshot } from '../../../contract/state.ts';

const WINDOW = 8_192;
const policy = resolvePolicy({ mask: { fromRatio: null } });

/** Carries a plan out with stand-in replacements, summary and ledger, as the apply activity would. */
function carryOut(context: MessageMeta[], plan: Plan, seq: number): MessageMeta[] {
  const replacements: Record<string, MessageMeta> = {};
  for (const op of plan.operations) {
    if (op.op === 'keep' || op.op === 'drop') continue;
    const original = context.find((m) => m.id === op.id)!;
    replacements[op.id] = { ...original, key: `r/${op.id}`, ref: original.key, kind: 'masked', tokens: op.tokens };
  }
  const summary: MessageMeta | undefined = plan.summary
    ? {
        id: `c${String(seq).padStart(6, '0')}`,
        role: 'user',
        tokens: plan.summary.estimatedTokens,
        chars: 1,
        key: `s/${seq}`,
        kind: 'summary',
      }
    : undefined;
  const ledger: MessageMeta | undefined = plan.summary
    ? { id: `l${String(seq).padStart(6, '0')}`, role: 'user', tokens: 40, chars: 1, key: `l/${seq}`, kind: 'ledger' }
    : undefined;
  // Summaries in their places (AgentScope Java's runs and rounds): one assistant message per part, no ledger.
  const parts = (plan.summary?.parts ?? []).map((part, i): MessageMeta => ({
    id: `c${String(seq).padStart(6, '0')}${i > 0 ? `-${i + 1}` : ''}`,
    role: 'assistant',
    tokens: part.estimatedTokens,
    chars: 1,
    key: `s/${seq}/${i + 1}`,
    kind: 'summary',
  }));
  if (parts.length > 0) return applyPlan(context, plan, replacements, parts[0], undefined, parts.slice(1));
  return applyPlan(context, plan, replacements, summary, ledger);
}

/** What the agent does next: a tool step, a user message, a reply, a failed turn, or a compaction's moment. */
const opArb = fc.oneof(
  fc.record({
    kind: fc.constant('tools' as const),
    calls: fc.integer({ min: 1, max: 3 }),
    size: fc.integer({ min: 20, max: 900 }),
  }),
  fc.record({ kind: fc.constant('user' as const), size: fc.integer({ min: 5, max: 400 }) }),
  fc.record({ kind: fc.constant('reply' as const), size: fc.integer({ min: 5, max: 400 }) }),
  fc.constant({ kind: 'fail' as const }),
  fc.constant({ kind: 'start' as const }),
  fc.constant({ kind: 'commit' as const }),
  fc.constant({ kind: 'block' as const }),
);

interface Job {
  made: Snapshot;
  tailFromSeq: number;
  context: MessageMeta[];
}

describe('the coverage invariant', () => {
  it('holds for background compactions committed at random step boundaries', () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 5, maxLength: 120 }), (ops) => {
        const c = Conversation.begin({ agentId: 'a', model: 'm' }, undefined, 'life');
        c.describedAs({
          info: { window: WINDOW, encoding: 'o200k_base', margin: 0 } as never,
          fixedTokens: 50,
          policy,
          gate: gateOf(policy, WINDOW),
        });
        /** Every message ever stored and not dropped by a failed turn, and everything compactions removed. */
        const stored = new Set<string>();
        const removed = new Set<string>();
        let job: Job | undefined;
        let seq = 0;
        let calls = 0;
        const add = (meta: Partial<ContextRecord> & { tokens: number; role: ContextRecord['role'] }) => {
          const id = c.newMessageId();
          stored.add(id);
          c.append({ id, chars: meta.tokens * 4, preview: '', ...meta });
        };
        const compactNow = (
          made: Snapshot,
          tailFromSeq: number,
          context: MessageMeta[],
          trigger: 'background' | 'forced',
        ) => {
          const input: PlanInput = {
            context,
            policy,
            window: WINDOW,
            fixedTokens: 50,
            trigger,
            cooldown: { consecutive: 0, lastTokensAfter: 0 },
            summarizer: 'available',
          };
          const plan = planCompaction(input);
          if (plan.action === 'skip') return;
          seq++;
          const after = carryOut(context, plan, seq);
          expect(compactionCoverage(context, after, plan.removed)).toEqual([]);
          for (const item of plan.removed) removed.add(item.id);
          c.compacted({
            made,
            context: after.map(({ key: _, ...record }) => ({ ...record, preview: '' })),
            event: {
              seq,
              tokensBefore: 1,
              tokensAfter: 1,
              keys: { context: `ctx/${seq}` },
            } as unknown as CompactionEventSummary,
            tailFromSeq,
            cooldown: c.state.cooldown!,
            trigger,
            maskPass: undefined,
            gate: gateOf(policy, WINDOW),
            ledger: undefined,
          });
        };
        const keyed = () => c.state.messages.map((m) => ({ ...m, key: m.key ?? `k/${m.id}` }));
        add({ role: 'user', tokens: 30 });
        for (const op of ops) {
          if (op.kind === 'tools') {
            const ids = Array.from({ length: op.calls }, () => `t${++calls}`);
            add({ role: 'assistant', tokens: 20, toolCallIds: ids });
            for (const id of ids) add({ role: 'tool', tokens: op.size, toolCallId: id });
          } else if (op.kind === 'user') add({ role: 'user', tokens: op.size });
          else if (op.kind === 'reply') add({ role: 'assistant', tokens: op.size });
          else if (op.kind === 'fail') {
            // A turn fails after the model asked for a tool: the unanswered call leaves the context.
            add({ role: 'assistant', tokens: 20, toolCallIds: [`t${++calls}`] });
            const last = c.state.messages.at(-1)!.id;
            c.turnFailed('failed');
            stored.delete(last);
          } else if (op.kind === 'start') {
            if (!job) job = { made: c.snapshot(), tailFromSeq: c.tailSeq, context: keyed() };
          } else if (op.kind === 'commit' || op.kind === 'block') {
            if (job && c.staleFor(job.made) === undefined)
              compactNow(job.made, job.tailFromSeq, job.context, 'background');
            job = undefined;
            // A blocking compaction waits for the one in the background, then compacts what is there now.
            if (op.kind === 'block') compactNow(c.snapshot(), c.tailSeq, keyed(), 'forced');
          }
          // Every stored message is in the context once, or was removed once; nothing else is in the context.
          expect(c.coverage()).toEqual([]);
          const inContext = c.state.messages.filter((m) => !['summary', 'ledger'].includes(kindOf(m))).map((m) => m.id);
          expect(new Set(inContext).size).toBe(inContext.length);
          // A message whose original was removed is in the context only as a reloadable stub (masked, cut).
          const raw = c.state.messages.filter((m) => kindOf(m) === 'normal' && m.ref === undefined).map((m) => m.id);
          for (const id of raw) expect(removed.has(id)).toBe(false);
          for (const id of stored) expect(inContext.includes(id) || removed.has(id)).toBe(true);
          for (const id of inContext) expect(stored.has(id)).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('names what a broken compaction or context does wrong', () => {
    const m = (id: string, kind?: string) => ({ id, ...(kind ? { kind } : {}) });
    expect(compactionCoverage([m('a'), m('b')], [m('a'), m('a')], [])).toEqual([
      'a is twice in the compacted context',
      'b left the context without being removed',
    ]);
    expect(compactionCoverage([m('a')], [m('a'), m('x')], [m('a'), m('y')])).toEqual([
      'x is in the compacted context but was not in the context it was made for',
      'a was removed and kept raw',
      'y was removed but was not in the context',
    ]);
    expect(compactionCoverage([m('a'), m('b')], [m('c1', 'summary'), m('b')], [m('a')])).toEqual([]);
    const ids = [1, 2, 4].map(messageIdOf).map((id) => m(id));
    expect(contextCoverage(ids, { baseLength: 0, tailFromSeq: 1 }, seqOf)).toEqual([
      'm000004 follows message 2 in the tail (expected sequence 3)',
    ]);
    expect(contextCoverage([m('c1', 'summary'), ...ids.slice(2)], { baseLength: 1, tailFromSeq: 4 }, seqOf)).toEqual(
      [],
    );
  });
});
