// @ts-check
/**
 * What the workflow bundle runs of the engine, checked by dependency-cruiser (`npm run lint:deps`). The worker bundles
 * workflows/index.ts and the turn-timing interceptor (workflows/turn-timing.ts) with everything they import as values,
 * followed transitively (through contract/ too); type imports are erased before bundling, so this cruise reads the code
 * as compiled. Every engine module the bundle reaches must be in the list below, and every module in the list must be
 * reached: the list is the truth, and the docs point here. A module added to it is workflow code from then on (a
 * change to it needs the same care for running agents: docs/changing-workflows.md).
 */
import { options } from '../.dependency-cruiser.js';

/** The engine modules the workflow bundle runs (and why it reaches each). */
export const WORKFLOW_ENGINE_MODULES = [
  'engine/trigger.ts', // the O(1) gate, the background threshold and the cooldown's step
  'engine/ledger.ts', // the task ledger's update after a summary
  'engine/messages.ts', // which message opens a user turn
  'engine/coverage.ts', // the coverage invariant over the context
  'engine/policy.ts', // through trigger.ts and contract/inputs.ts: the message limit, the strategies' names
  'engine/facts.ts', // through ledger.ts: the facts kept from the user's messages
  'engine/summary.ts', // through ledger.ts: the summary's JSON and the ledger's fields
  'engine/text.ts', // through ledger.ts, messages.ts and facts.ts: cutting text at a character boundary
  // the compaction decision before a plan is asked for: a masking pass that would find nothing or not pay
  // (workflows/compaction-refs.ts), and what it reads: the gate after it, which tool results it may mask, a stub's size
  'engine/planner/preflight.ts',
  // an automatic plan no compaction could make pay (workflows/compaction-refs.ts `cannotPay`)
  'engine/planner/price-bound.ts',
  'engine/gates.ts',
  'engine/planner/protection.ts',
  'engine/planner/sizes.ts',
  'engine/turns.ts', // through protection.ts: the steps and turns of the context
  'engine/pricing.ts', // what the agent's model calls and compactions cost, and the cached share of its input
  // whether a masking pass pays for the prompt cache it invalidates (engine/planner/preflight.ts):
  'engine/compaction-value.ts',
  'engine/budget-note.ts', // the budget note and context_budget's answer (workflows/context-tools.ts)
  // the registry's window and price, left out of a model call's input when they are the agent's (contract/lean-calls.ts):
  // only what an activity input says, which replay does not compare, so a registry change replays as before
  'engine/models.ts',
];

const LISTED = WORKFLOW_ENGINE_MODULES.map((path) => `^${path.replace(/\./g, '\\.')}$`);

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'workflow-bundle-engine',
      comment: `The workflow bundle runs only these engine modules: ${WORKFLOW_ENGINE_MODULES.join(', ')} (lint/workflow-bundle.js).`,
      severity: 'error',
      from: { path: '^workflows/' },
      to: { path: '^engine/', pathNot: LISTED, reachable: true },
    },
    {
      name: 'workflow-bundle-engine-listed',
      comment:
        'An engine module listed in lint/workflow-bundle.js that the workflow bundle no longer reaches: drop it.',
      severity: 'error',
      from: { path: '^workflows/' },
      to: { path: LISTED, reachable: false },
    },
  ],
  // Value imports only: the bundle is built from the code as compiled, where type imports are gone.
  options: { ...options, tsPreCompilationDeps: false },
};
