/**
 * The compaction activities (activities/compaction/) as the worker registers them: planning, summarizing and applying
 * each publish their beginning and their end, or failure, to the agent's live stream (docs/streaming.md).
 */
import { agentLife } from '../contract/keys.ts';
import type { CompactionPhase } from '../contract/stream.ts';
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
  return {
    ...compaction,
    planCompaction: phased('planning', (input: Parameters<typeof compaction.planCompaction>[0]) =>
      compaction.planCompaction(input),
    ),
    summarizeSpan: phased('summarizing', (input: Parameters<typeof compaction.summarizeSpan>[0]) =>
      compaction.summarizeSpan(input),
    ),
    applyCompaction: phased('applying', (input: Parameters<typeof compaction.applyCompaction>[0]) =>
      compaction.applyCompaction(input),
    ),
  };
}
