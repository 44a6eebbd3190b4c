/**
 * The compaction activities (activities/compaction/) as the worker registers them: planning, summarizing and applying
 * each publish their beginning and their end, or failure, to the agent's live stream (docs/streaming.md); storing a
 * draft, applying and reverting publish what became of the compaction (`compaction-outcome`).
 */
import { agentLife } from '../contract/keys.ts';
import type { AgentLife } from '../contract/keys.ts';
import type { CompactionOutcome, CompactionPhase } from '../contract/stream.ts';
import { createCompactionActivities } from './compaction/index.ts';
import type { CompactionDeps } from './compaction/index.ts';
import type { AgentStream } from './stream.ts';

/** The compaction activities over `deps`, the plan, summarize and apply steps' phases published on `stream`. */
export function createPhasedCompaction(deps: CompactionDeps, stream: AgentStream) {
  const compaction = createCompactionActivities(deps);
  /** A compaction step, its beginning and end published to the agent's live stream. */
  const phased =
    <I extends { agentId: string; life?: string; seq: number }, R>(
      phase: CompactionPhase,
      step: (input: I) => Promise<R>,
    ) =>
    async (input: I): Promise<R> => {
      const agent = agentLife(input);
      await stream.compaction(agent, input.seq, phase, 'began');
      try {
        const result = await step(input);
        await stream.compaction(agent, input.seq, phase, 'ended');
        return result;
      } catch (error) {
        await stream.compaction(agent, input.seq, phase, 'failed');
        throw error;
      }
    };
  /** What became of compaction `seq`, once in the stream (its id: a retry does not publish it again). */
  const outcome = (
    agent: AgentLife,
    seq: number,
    what: CompactionOutcome,
    id: string,
    details: { draft?: string; toEvent?: number; tokensBefore: number; tokensAfter: number },
  ) => stream.announce(agent, [{ kind: 'compaction-outcome', id, seq, outcome: what, ...details }]);
  const applying = phased('applying', (input: Parameters<typeof compaction.applyCompaction>[0]) =>
    compaction.applyCompaction(input),
  );
  return {
    ...compaction,
    planCompaction: phased('planning', (input: Parameters<typeof compaction.planCompaction>[0]) =>
      compaction.planCompaction(input),
    ),
    summarizeSpan: phased('summarizing', (input: Parameters<typeof compaction.summarizeSpan>[0]) =>
      compaction.summarizeSpan(input),
    ),
    applyCompaction: async (input: Parameters<typeof compaction.applyCompaction>[0]) => {
      const result = await applying(input);
      const sizes = 'noGain' in result ? result.noGain : result.event;
      const what = 'noGain' in result ? 'no-gain' : 'applied';
      await outcome(agentLife(input), input.seq, what, `compaction-${input.seq}-${what}`, {
        tokensBefore: sizes.tokensBefore,
        tokensAfter: sizes.tokensAfter,
      });
      return result;
    },
    storeDraft: async (input: Parameters<typeof compaction.storeDraft>[0]) => {
      const text = await compaction.storeDraft(input);
      const { id, tokensBefore, tokensAfter } = input.draft;
      await outcome(agentLife(input), input.seq, 'drafted', `${id}-drafted`, { draft: id, tokensBefore, tokensAfter });
      return text;
    },
    revertContext: async (input: Parameters<typeof compaction.revertContext>[0]) => {
      const result = await compaction.revertContext(input);
      const { tokensBefore, tokensAfter } = result.event;
      await outcome(agentLife(input), input.seq, 'reverted', `revert-${input.seq}`, {
        toEvent: input.toEvent,
        tokensBefore,
        tokensAfter,
      });
      return result;
    },
  };
}
