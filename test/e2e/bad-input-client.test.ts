/**
 * Bad input through the client library, a row per case (the rows' columns and states: test/support/bad-input.ts):
 * each refused with a clear error naming the field and the limit, of a class or failure type a caller can branch on,
 * and the state unchanged.
 */
import { afterAll, beforeAll } from 'vitest';
import {
  approveDraft,
  compactAgent,
  compactionEvents,
  compactionHistory,
  discardDraft,
  queueMessage,
  requestCompaction,
  sendMessage,
  startAgent,
} from '../../client/agents.ts';
import type { StartAgentOptions } from '../../client/agents.ts';
import type { CompactInput } from '../../contract/inputs.ts';
import {
  describeRows,
  ID_10KB,
  ID_RULE,
  library,
  PRESET_LIST,
  startAgents,
  STRATEGY_LIST,
  x,
} from '../support/bad-input.ts';
import type { Row } from '../support/bad-input.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

const OPEN = newAgentId('bad-open');
const CLOSED = newAgentId('bad-closed');

let h: Harness;
beforeAll(async () => {
  h = await startHarness((request) => ({ content: `got ${request.body.messages.length} messages` }));
  await startAgents(h, { open: [OPEN], closed: [CLOSED] });
});
afterAll(async () => {
  await h?.close();
});

function rows(): Row[] {
  const fresh = Array.from({ length: 9 }, () => newAgentId('bad-fresh'));
  const start = (agentId: string, extra: Partial<StartAgentOptions>) => () =>
    library(() => startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue, ...extra }));
  return [
    {
      surface: 'client library',
      case: 'empty id',
      input: "startAgent({ agentId: '' })",
      run: start('', {}),
      error: [`agent id "": ${ID_RULE}`],
      type: 'InvalidAgentIdError',
      state: { absent: '' },
    },
    {
      surface: 'client library',
      case: 'id with a slash and ..',
      input: "startAgent({ agentId: 'x/../y' })",
      run: start('x/../y', {}),
      error: [`agent id "x/../y": ${ID_RULE}`],
      type: 'InvalidAgentIdError',
      state: { absent: 'x/../y' },
    },
    {
      surface: 'client library',
      case: 'id of 10 KB',
      input: 'startAgent({ agentId: <10,240 characters> })',
      run: start(ID_10KB, {}),
      error: [/^agent id "ax{40,80}…" \(10240 characters\): must be 1 to 64/],
      type: 'InvalidAgentIdError',
      state: { absent: ID_10KB },
    },
    {
      surface: 'client library',
      case: 'id of a wrong type',
      input: 'startAgent({ agentId: 42 })',
      run: start(42 as unknown as string, {}),
      error: ['agent id 42: must be a string'],
      type: 'InvalidAgentIdError',
      state: { absent: '42' },
    },
    {
      surface: 'client library',
      case: 'model of a wrong type',
      input: 'startAgent({ model: 42 })',
      run: start(fresh[1]!, { model: 42 as unknown as string }),
      error: ['model: must be a non-empty string (got 42)'],
      type: 'InvalidInputError',
      state: { absent: fresh[1]! },
    },
    {
      surface: 'client library',
      case: 'system prompt of a wrong type',
      input: "startAgent({ systemPrompt: { role: 'system' } })",
      run: start(fresh[2]!, { systemPrompt: { role: 'system' } as unknown as string }),
      error: ['systemPrompt: must be a string'],
      type: 'InvalidInputError',
      state: { absent: fresh[2]! },
    },
    {
      surface: 'client library',
      case: 'huge system prompt',
      input: 'startAgent({ systemPrompt: <200,001 x> })',
      run: start(fresh[3]!, { systemPrompt: x(200_001) }),
      error: ['systemPrompt: 200001 characters is over the limit of 200000'],
      type: 'InvalidInputError',
      state: { absent: fresh[3]! },
    },
    {
      surface: 'client library',
      case: 'turn budget of 0 steps',
      input: 'startAgent({ turnBudget: { steps: 0 } })',
      run: start(fresh[4]!, { turnBudget: { steps: 0 } }),
      error: ['turnBudget.steps: 0 is not allowed (an integer from 1 to 1,000,000)'],
      type: 'InvalidInputError',
      state: { absent: fresh[4]! },
    },
    {
      surface: 'client library',
      case: 'unknown budget',
      input: 'startAgent({ turnBudget: { minutes: 5 } })',
      run: start(fresh[5]!, { turnBudget: { minutes: 5 } as never }),
      error: ['turnBudget.minutes: not a budget (one of steps, tokens, seconds)'],
      type: 'InvalidInputError',
      state: { absent: fresh[5]! },
    },
    {
      surface: 'client library',
      case: 'bad preset',
      input: "startAgent({ compaction: { preset: 'nope' } })",
      run: start(fresh[6]!, { compaction: { preset: 'nope' } }),
      error: [`preset: "nope" is not allowed (${PRESET_LIST})`],
      type: 'PolicyError',
      state: { absent: fresh[6]! },
    },
    {
      surface: 'client library',
      case: 'policy of a wrong type',
      input: "startAgent({ compaction: 'aggressive' })",
      run: start(fresh[7]!, { compaction: 'aggressive' as never }),
      error: ['compaction: must be an object (a preset and overrides of its fields)'],
      type: 'InvalidInputError',
      state: { absent: fresh[7]! },
    },
    {
      surface: 'client library',
      case: 'window under its limit',
      input: 'startAgent({ modelOverride: { window: 10 } })',
      run: start(fresh[8]!, { modelOverride: { window: 10 } }),
      error: ['window: 10 is outside the allowed range (an integer from 1024 to 10000000 tokens)'],
      type: 'ModelOverrideError',
      state: { absent: fresh[8]! },
    },
    {
      surface: 'client library',
      case: 'start a closed agent',
      input: 'startAgent({ agentId: CLOSED })',
      run: start(CLOSED, {}),
      error: [`agent ${CLOSED} is closed (completed)`, '--reopen'],
      type: 'AgentClosedError',
      state: { unchanged: CLOSED },
    },
    {
      surface: 'client library',
      case: 'empty text',
      input: "sendMessage(OPEN, '')",
      run: () => library(() => sendMessage(h.client, OPEN, '')),
      error: ['text: must not be empty'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'text of 3 MB',
      input: 'sendMessage(OPEN, <3,000,000 x>)',
      run: () => library(() => sendMessage(h.client, OPEN, x(3_000_000))),
      error: ['text: 3000000 characters is over the limit of 200000'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'text of a wrong type',
      input: 'sendMessage(OPEN, { text: "hi" })',
      run: () => library(() => sendMessage(h.client, OPEN, { text: 'hi' } as unknown as string)),
      error: ['text: must be a string'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'expected turn not an integer',
      input: "sendMessage(OPEN, 'hi', { expectedTurn: 1.5 })",
      run: () => library(() => sendMessage(h.client, OPEN, 'hi', { expectedTurn: 1.5 })),
      error: ['expectedTurn: must be a positive integer (got 1.5)'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'expected turn already taken',
      input: "sendMessage(OPEN, 'hi', { expectedTurn: 1 })",
      run: () => library(() => sendMessage(h.client, OPEN, 'hi', { expectedTurn: 1 })),
      error: ['expectedTurn: this message would open turn 2, not 1'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'unknown agent',
      input: "sendMessage(<fresh>, 'hi')",
      run: () => library(() => sendMessage(h.client, fresh[0]!, 'hi')),
      error: [fresh[0]!, 'not found'],
      type: 'WorkflowNotFoundError',
      state: { absent: fresh[0]! },
    },
    {
      surface: 'client library',
      case: 'closed agent',
      input: "sendMessage(CLOSED, 'hi')",
      run: () => library(() => sendMessage(h.client, CLOSED, 'hi')),
      error: [`agent ${CLOSED} is closed`],
      type: 'AgentClosedError',
      state: { unchanged: CLOSED },
    },
    {
      surface: 'client library',
      case: 'bad strategy',
      input: "compactAgent(OPEN, { strategy: 'nope' })",
      run: () => library(() => compactAgent(h.client, OPEN, { strategy: 'nope' as never })),
      error: [`strategy: "nope" ${STRATEGY_LIST}`],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'force of a wrong type',
      input: "compactAgent(OPEN, { force: 'yes' })",
      run: () => library(() => compactAgent(h.client, OPEN, { force: 'yes' } as unknown as CompactInput)),
      error: ['force: must be true or false (got "yes")'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'signal: strategy of a wrong type',
      input: 'requestCompaction(OPEN, { strategy: 5 })',
      run: () => library(() => requestCompaction(h.client, OPEN, { strategy: 5 as never })),
      error: ['strategy: 5 is not one of truncate-tool-results'],
      type: 'InvalidInputError',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'signal: huge text',
      input: 'queueMessage(OPEN, <200,001 x>)',
      run: () => library(() => queueMessage(h.client, OPEN, x(200_001))),
      error: ['text: 200001 characters is over the limit of 200000'],
      type: 'InvalidInputError',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'events after a negative seq',
      input: 'compactionEvents(OPEN, { since: -1 })',
      run: () => library(() => compactionEvents(h.client, OPEN, { since: -1 })),
      error: ['since: must be an integer ≥ 0 (got -1)'],
      type: 'InvalidInputError',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'event history limit of a wrong type',
      input: "compactionHistory(OPEN, { limit: 'all' })",
      run: () => library(() => compactionHistory(h.client, h.store, OPEN, { limit: 'all' as never })),
      error: ['limit: must be an integer ≥ 0 (got "all")'],
      type: 'InvalidInputError',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'review: instructions over their limit',
      input: 'compactAgent(OPEN, { review: true, instructions: <4,001 x> })',
      run: () => library(() => compactAgent(h.client, OPEN, { review: true, instructions: x(4_001) })),
      error: ['instructions: 4001 characters is over the limit of 4000'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'approve: a draft id that is not one',
      input: "approveDraft(OPEN, 'nope')",
      run: () => library(() => approveDraft(h.client, OPEN, 'nope')),
      error: ['draft: must be a draft id like "draft-1" (got "nope")'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'discard: a draft that is not pending',
      input: "discardDraft(OPEN, 'draft-1')",
      run: () => library(() => discardDraft(h.client, OPEN, 'draft-1')),
      error: ['draft: draft-1 is not pending: no draft is pending'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
  ];
}

describeRows('client library', 8, rows(), () => h);
