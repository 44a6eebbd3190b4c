/**
 * Bad input through the temporal CLI (Updates, Signals and a workflow start, as any client of the contract sends
 * them), a row per case (the rows' columns and states: test/support/bad-input.ts): an Update refused by its
 * validator naming the field and the limit, a Signal dropped and counted, a start that fails before doing anything.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { expect } from 'vitest';
import { AGENT_WORKFLOW, agentWorkflowId } from '../../contract/agent.ts';
import { describeRows, ID_RULE, rowHarness, STRATEGY_LIST, x } from '../support/bad-input.ts';
import type { Outcome, Row } from '../support/bad-input.ts';
import { newAgentId } from '../support/harness.ts';
import { temporalCli } from '../support/temporal-cli.ts';

const OPEN = newAgentId('bad-open');
const CLOSED = newAgentId('bad-closed');

let temporal: (...args: string[]) => Promise<string>;
let files: string;
const h = rowHarness(
  { open: [OPEN], closed: [CLOSED] },
  {
    ready: async (started) => {
      temporal = await temporalCli(started);
      files = await mkdtemp(join(tmpdir(), 'bad-input-temporal-'));
    },
  },
);

/**
 * A temporal CLI command: its error, as the CLI logs it (`msg="unable to update workflow: … (type: InvalidInput, …)"`,
 * unescaped) and the failure type it names; '' when it succeeded (a Signal is always accepted).
 */
function temporalCliRun(...args: string[]): Promise<Outcome> {
  return temporal(...args).then(
    () => ({ text: '' }),
    (error: Error) => {
      const logged = /msg="((?:[^"\\]|\\.)*)"/.exec(error.message)?.[1]?.replaceAll('\\"', '"') ?? error.message;
      const type = /\(type: (\w+),/.exec(logged)?.[1];
      return { text: logged, ...(type ? { type } : {}) };
    },
  );
}

/** `temporal workflow update execute` / `signal` on an agent, the input from a file (an argument holds 128 KiB). */
async function tUpdate(agentId: string, name: string, input: unknown): Promise<Outcome> {
  const file = join(files, `${name}-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(file, JSON.stringify(input));
  const target = ['--workflow-id', agentWorkflowId(agentId), '--name', name, '--input-file', file];
  return temporalCliRun('workflow', 'update', 'execute', ...target);
}
async function tSignal(agentId: string, name: string, input: unknown): Promise<Outcome> {
  const file = join(files, `${name}-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(file, JSON.stringify(input));
  return temporalCliRun(
    'workflow',
    'signal',
    '--workflow-id',
    agentWorkflowId(agentId),
    '--name',
    name,
    '--input-file',
    file,
  );
}

/**
 * `temporal workflow start` of an agent with `input`: the workflow refuses it at its start. The outcome is its
 * failure (the workflow's result).
 */
async function tStart(agentId: string, input: unknown): Promise<Outcome> {
  const file = join(files, `start-${agentId}.json`);
  await writeFile(file, JSON.stringify(input));
  const started = await temporalCliRun(
    'workflow',
    'start',
    '--type',
    AGENT_WORKFLOW,
    '--task-queue',
    h().taskQueue,
    '--workflow-id',
    agentWorkflowId(agentId),
    '--input-file',
    file,
  );
  expect(started.text).toBe('');
  const failure = await h()
    .client.workflow.getHandle(agentWorkflowId(agentId))
    .result()
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  expect(failure).toBeInstanceOf(WorkflowFailedError);
  const cause = (failure as WorkflowFailedError).cause as Error & { type?: string };
  return { text: cause.message, type: cause.type ?? cause.name };
}

function rows(): Row[] {
  const fresh = Array.from({ length: 4 }, () => newAgentId('bad-fresh'));
  return [
    {
      surface: 'temporal CLI',
      case: 'update send: empty text',
      input: 'update execute --name send --input {"text":""}',
      run: () => tUpdate(OPEN, 'send', { text: '' }),
      error: ['text: must not be empty'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update send: text of a wrong type',
      input: 'update execute --name send --input {"text":["hi"]}',
      run: () => tUpdate(OPEN, 'send', { text: ['hi'] }),
      error: ['text: must be a string'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update send: input not an object',
      input: 'update execute --name send --input "hi"',
      run: () => tUpdate(OPEN, 'send', 'hi'),
      error: ['send: input must be an object'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update send: huge text',
      input: 'update execute --name send --input-file <{"text": 200,001 x}>',
      run: () => tUpdate(OPEN, 'send', { text: x(200_001) }),
      error: ['text: 200001 characters is over the limit of 200000'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update send: expectedTurn of a wrong type',
      input: 'update execute --name send --input {"text":"hi","expectedTurn":"2"}',
      run: () => tUpdate(OPEN, 'send', { text: 'hi', expectedTurn: '2' }),
      error: ['expectedTurn: must be a positive integer (got "2")'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update compact: bad strategy',
      input: 'update execute --name compact --input {"strategy":"nope"}',
      run: () => tUpdate(OPEN, 'compact', { strategy: 'nope' }),
      error: [`strategy: "nope" ${STRATEGY_LIST}`],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update compact: instructions over their limit',
      input: 'update execute --name compact --input {"instructions": <4,001 x>}',
      run: () => tUpdate(OPEN, 'compact', { instructions: x(4_001) }),
      error: ['instructions: 4001 characters is over the limit of 4000'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update compact: force of a wrong type',
      input: 'update execute --name compact --input {"force":1}',
      run: () => tUpdate(OPEN, 'compact', { force: 1 }),
      error: ['force: must be true or false (got 1)'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update configure: window out of range',
      input: 'update execute --name configure --input {"window":100}',
      run: () => tUpdate(OPEN, 'configure', { window: 100 }),
      error: ['window: 100 is not allowed (an integer from 1,024 to 10,000,000 tokens)'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update configure: no setting',
      input: 'update execute --name configure --input {}',
      run: () => tUpdate(OPEN, 'configure', {}),
      error: ['configure: give at least one of model, window, systemPrompt'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update configure: a model the registry does not know, without a window',
      input: 'update execute --name configure --input {"model":"my-own-model"}',
      run: () => tUpdate(OPEN, 'configure', { model: 'my-own-model' }),
      error: ['model: unknown model "my-own-model"'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update of an unknown name',
      input: 'update execute --name sendd --input {"text":"hi"}',
      run: () => tUpdate(OPEN, 'sendd', { text: 'hi' }),
      error: ['No registered handler for update: sendd'],
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update send to a closed agent',
      input: 'update execute --name send (CLOSED)',
      run: () => tUpdate(CLOSED, 'send', { text: 'hi' }),
      error: ['workflow execution already completed'],
      state: { unchanged: CLOSED },
    },
    {
      surface: 'temporal CLI',
      case: 'signal message: empty text',
      input: 'signal --name message --input {"text":" "}',
      run: () => tSignal(OPEN, 'message', { text: ' ' }),
      error: [],
      state: { dropped: 'message', agent: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'signal message: huge text',
      input: 'signal --name message --input-file <{"text": 200,001 x}>',
      run: () => tSignal(OPEN, 'message', { text: x(200_001) }),
      error: [],
      state: { dropped: 'message', agent: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'signal message: input not an object',
      input: 'signal --name message --input 42',
      run: () => tSignal(OPEN, 'message', 42),
      error: [],
      state: { dropped: 'message', agent: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'signal compact: bad strategy',
      input: 'signal --name compact --input {"strategy":"nope"}',
      run: () => tSignal(OPEN, 'compact', { strategy: 'nope' }),
      error: [],
      state: { dropped: 'compact', agent: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'start: agent id with .. that is not the workflow’s',
      input: 'workflow start --workflow-id agent-<fresh> --input {"agentId":"../victim",…}',
      run: () => tStart(fresh[0]!, { agentId: '../victim', model: 'gpt-4o-mini' }),
      error: [`agentId: "../victim" ${ID_RULE}`],
      type: 'InvalidInput',
      state: { failedAtStart: fresh[0]! },
    },
    {
      surface: 'temporal CLI',
      case: 'start: model of a wrong type',
      input: 'workflow start --input {"agentId":<fresh>,"model":42}',
      run: () => tStart(fresh[1]!, { agentId: fresh[1]!, model: 42 }),
      error: ['model: must be a non-empty string (got 42)'],
      type: 'InvalidInput',
      state: { failedAtStart: fresh[1]! },
    },
    {
      surface: 'temporal CLI',
      case: 'start: turn budget over its limit',
      input: 'workflow start --input {…,"turnBudget":{"seconds":1e9}}',
      run: () => tStart(fresh[2]!, { agentId: fresh[2]!, model: 'gpt-4o-mini', turnBudget: { seconds: 1e9 } }),
      error: ['turnBudget.seconds: 1000000000 is not allowed (an integer from 1 to 2,592,000)'],
      type: 'InvalidInput',
      state: { failedAtStart: fresh[2]! },
    },
    {
      surface: 'temporal CLI',
      case: 'start: a sub-agent budget out of range',
      input: 'workflow start --input {…,"delegation":{"turnBudget":{"steps":0}}}',
      run: () =>
        tStart(fresh[3]!, { agentId: fresh[3]!, model: 'gpt-4o-mini', delegation: { turnBudget: { steps: 0 } } }),
      error: ['delegation.turnBudget.steps: 0 is not allowed (an integer from 1 to 1,000,000)'],
      type: 'InvalidInput',
      state: { failedAtStart: fresh[3]! },
    },
    {
      surface: 'temporal CLI',
      case: 'update compact: review with instructions over their limit',
      input: 'update execute --name compact --input {"review":true,"instructions": <4,001 x>}',
      run: () => tUpdate(OPEN, 'compact', { review: true, instructions: x(4_001) }),
      error: ['instructions: 4001 characters is over the limit of 4000'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update approve: a draft id that is not one',
      input: 'update execute --name approve --input {"draft":"nope"}',
      run: () => tUpdate(OPEN, 'approve', { draft: 'nope' }),
      error: ['draft: must be a draft id like "draft-1" (got "nope")'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update discard: a draft that is not pending',
      input: 'update execute --name discard --input {"draft":"draft-1"}',
      run: () => tUpdate(OPEN, 'discard', { draft: 'draft-1' }),
      error: ['draft: draft-1 is not pending: no draft is pending'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
  ];
}

describeRows('temporal CLI', 8, rows(), h);
