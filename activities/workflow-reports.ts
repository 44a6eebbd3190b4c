/**
 * What only the workflow knows, reported by it through activities: items for the agent's live stream
 * (`publishStream`), and a break of the coverage invariant it found (`reportViolation`).
 */
import { log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { agentLife } from '../contract/keys.ts';
import { FAILURE } from '../contract/failures.ts';
import type { ViolationInput } from '../contract/activities.ts';
import { PUBLISH_MAX_ITEMS } from '../contract/stream.ts';
import type { PublishStreamInput } from '../contract/stream.ts';
import { untilStored } from './stored.ts';
import { retrying } from './stream.ts';
import type { AgentStream } from './stream.ts';

/** The activities publishStream and reportViolation; `strictInvariants`: a violation fails for good (tests). */
export function createWorkflowReports({
  stream,
  strictInvariants,
}: {
  stream: AgentStream;
  strictInvariants: boolean;
}) {
  return {
    /**
     * Publishes items only the workflow knows (a steer landed, an interrupt, an approval asked or answered, a turn
     * ended) to the agent's live stream (contract/stream.ts {@link PublishStreamInput}): a short storage write,
     * scheduled with STORE_OPTIONS. Each item's `id` keeps a retry from publishing it twice.
     */
    async publishStream(input: PublishStreamInput): Promise<void> {
      if (!Array.isArray(input.items) || input.items.length > PUBLISH_MAX_ITEMS) {
        throw ApplicationFailure.nonRetryable(
          `publishStream: items must be a list of at most ${PUBLISH_MAX_ITEMS} items`,
          FAILURE.badConfiguration,
        );
      }
      for (const [i, item] of input.items.entries()) {
        if (typeof item?.id !== 'string' || item.id === '' || typeof item.kind !== 'string') {
          throw ApplicationFailure.nonRetryable(
            `publishStream: items[${i}] needs a kind and an id (a non-empty string unique in the agent's life)`,
            FAILURE.badConfiguration,
          );
        }
      }
      await untilStored(() => stream.publish(agentLife(input), input.items, { once: retrying() }));
    },

    /**
     * A break of the coverage invariant the workflow found (scheduled only then): fails for good with
     * LONGRUN_STRICT_INVARIANTS on (tests fail loudly); otherwise logged, and the workflow records it in its state.
     */
    reportViolation(input: ViolationInput): Promise<void> {
      const message = `coverage invariant broken ${input.where}: ${input.problems.join('; ')}`;
      if (strictInvariants) throw ApplicationFailure.nonRetryable(message, FAILURE.invariantViolated);
      log.error(message, { agentId: input.agentId });
      return Promise.resolve();
    },
  };
}
