/**
 * Histories recorded before turn budgets replay against today's workflow code. Then a turn made at most `maxSteps`
 * (default 8) model calls that could call tools and one more with tool_choice 'none', after which it ended even if
 * the provider ignored that and called tools again; now a turn stops at its budget without that call. The workflow
 * keeps the old rule for a run whose history has no `turn-budget` patch marker where the two rules part.
 *
 * The fixtures were recorded by the code before turn budgets (commit 7e0b6c7) with a model that calls a tool on
 * every request, one turn each: `maxSteps: 2` (3 model calls, the last forced) and the default (9 model calls).
 * They are protobuf-encoded History messages.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { sharedBundle } from '../support/harness.ts';

const FIXTURES = join(PROJECT_ROOT, 'test/fixtures/histories');

describe('histories from before turn budgets', () => {
  for (const [file, workflowId, modelCalls] of [
    ['pre-turn-budget-max-steps-2.history.bin', 'agent-old-two', 3],
    ['pre-turn-budget-default.history.bin', 'agent-old-default', 9],
  ] as const) {
    it(`${file} (${modelCalls} model calls in its turn) replays without a nondeterminism error`, async () => {
      const history = temporal.api.history.v1.History.decode(readFileSync(join(FIXTURES, file)));
      const calls = history.events.filter(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel',
      );
      expect(calls).toHaveLength(modelCalls);
      await Worker.runReplayHistory({ workflowBundle: await sharedBundle() }, history, workflowId);
    });
  }
});
