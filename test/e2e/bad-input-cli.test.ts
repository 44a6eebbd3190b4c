/**
 * Bad input through the `longrun` CLI, a row per case (the rows' columns and states: test/support/bad-input.ts): each
 * refused with a clear error naming the field and the limit, the exit code docs/cli.md gives (2 when it is refused
 * before anything is sent), and the state unchanged.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentState } from '../../client/agents.ts';
import { agentPrefix } from '../../contract/keys.ts';
// The rows' harness, and the words the errors hold.
import {
  cliOutcome,
  describeRows,
  rowHarness,
  ID_10KB,
  ID_RULE,
  PRESET_LIST,
  STRATEGY_LIST,
  x,
} from '../support/bad-input.ts';
import type { Outcome, Row } from '../support/bad-input.ts';
import { newAgentId } from '../support/harness.ts';

const OPEN = newAgentId('bad-open');
const CLOSED = newAgentId('bad-closed');
/** Another agent, whose stored message OPEN must not reload. */
const OTHER = newAgentId('bad-other');
/** An agent id nothing was ever started or stored under. */
const NOBODY = newAgentId('bad-nobody');
let otherMessageKey = '';

let files: string;
const h = rowHarness(
  { open: [OPEN, OTHER], closed: [CLOSED] },
  {
    ready: async (started) => {
      files = await mkdtemp(join(tmpdir(), 'bad-input-cli-'));
      otherMessageKey = (await agentState(started.client, OTHER)).messages[0]!.key;
    },
  },
);

const cli = (...args: string[]): Promise<Outcome> => cliOutcome(h(), ...args);

/** A file of `text`, for a flag that reads one. */
async function textFile(name: string, text: string): Promise<string> {
  const file = join(files, name);
  await writeFile(file, text);
  return file;
}

/** A JSONL recording in a temporary file, for `longrun replay`. */
function recording(name: string, lines: string[]): Promise<string> {
  return textFile(`${name}.jsonl`, lines.join('\n'));
}

/** `longrun replay` of a one-message recording with `--policy` a file of `policy`'s text (`name`), `flags` before it. */
async function replayUnderPolicy(name: string, policy: string, ...flags: string[]): Promise<Outcome> {
  const session = await recording('policy-session', [JSON.stringify({ role: 'user', content: 'hi' })]);
  return cli('replay', session, ...flags, '--policy', await textFile(name, policy));
}

function rows(): Row[] {
  const fresh = Array.from({ length: 5 }, () => newAgentId('bad-fresh'));
  const user = (m: string) => JSON.stringify({ role: 'user', content: m });
  return [
    {
      surface: 'longrun CLI',
      case: 'empty text',
      input: 'send OPEN "   "',
      run: () => cli('send', OPEN, '   '),
      error: ['text: must not be empty'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'huge text',
      input: 'send OPEN <100,000 x> <100,001 x>',
      run: () => cli('send', OPEN, x(100_000), x(100_001)),
      error: ['text: 200002 characters is over the limit of 200000'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'unknown agent',
      input: 'send <fresh id> hi',
      run: () => cli('send', fresh[0]!, 'hi'),
      error: [`unknown agent ${fresh[0]!}`, 'longrun start'],
      exit: 3,
      state: { absent: fresh[0]! },
    },
    {
      surface: 'longrun CLI',
      case: 'closed agent',
      input: 'send CLOSED hi',
      run: () => cli('send', CLOSED, 'hi'),
      error: [`agent ${CLOSED} is closed`],
      exit: 4,
      state: { unchanged: CLOSED },
    },
    {
      surface: 'longrun CLI',
      case: 'id with a slash',
      input: 'state a/b',
      run: () => cli('state', `${OPEN}/x`),
      error: [`agent id "${OPEN}/x": ${ID_RULE}`],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'id ..',
      input: 'start ..',
      run: () => cli('start', '..'),
      error: [`agent id "..": ${ID_RULE}`, 'starting with a letter or digit'],
      exit: 2,
      state: { absent: '..' },
    },
    {
      surface: 'longrun CLI',
      case: 'id with control characters',
      input: 'start "a\\u0007\\u001b[2Jb"',
      run: () => cli('start', 'a\u0007\u001b[2Jb'),
      error: ['agent id "a\\u0007\\u001b[2Jb"', ID_RULE],
      exit: 2,
      state: { absent: 'a\u0007\u001b[2Jb' },
    },
    {
      surface: 'longrun CLI',
      case: 'id of 10 KB',
      input: 'start <10,240 characters>',
      run: () => cli('start', ID_10KB),
      error: [/agent id "ax{40,80}…" \(10240 characters\): must be 1 to 64/],
      exit: 2,
      state: { absent: ID_10KB },
    },
    {
      surface: 'longrun CLI',
      case: 'unicode id',
      input: 'start agënt-ü',
      run: () => cli('start', 'agënt-ü'),
      error: ['agent id "agënt-ü"', ID_RULE],
      exit: 2,
      state: { absent: 'agënt-ü' },
    },
    {
      surface: 'longrun CLI',
      case: 'unknown flag',
      input: 'state OPEN --bogus',
      run: () => cli('state', OPEN, '--bogus'),
      error: ["state: Unknown option '--bogus' (its options: --json)"],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'another command’s flag',
      input: 'send OPEN hi --strategy halve',
      run: () => cli('send', OPEN, 'hi', '--strategy', 'halve'),
      error: ['send: --strategy is not an option of this command (its options: --no-wait, --expect-turn, --json)'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'bad preset',
      input: 'start <fresh> --preset nope',
      run: () => cli('start', fresh[1]!, '--preset', 'nope'),
      error: [`preset: "nope" is not allowed (${PRESET_LIST})`],
      exit: 2,
      state: { absent: fresh[1]! },
    },
    {
      surface: 'longrun CLI',
      case: 'bad strategy',
      input: 'compact OPEN --strategy nope',
      run: () => cli('compact', OPEN, '--strategy', 'nope'),
      error: [`--strategy: "nope" ${STRATEGY_LIST}`],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'window not a number',
      input: 'start <fresh> --window abc',
      run: () => cli('start', fresh[2]!, '--window', 'abc'),
      error: ['--window: must be an integer ≥ 1 (got "abc")'],
      exit: 2,
      state: { absent: fresh[2]! },
    },
    {
      surface: 'longrun CLI',
      case: 'step budget over its limit',
      input: 'start <fresh> --max-steps 2000000',
      run: () => cli('start', fresh[3]!, '--max-steps', '2000000'),
      error: ['--max-steps: must be an integer from 1 to 1000000 (got "2000000")'],
      exit: 2,
      state: { absent: fresh[3]! },
    },
    {
      surface: 'longrun CLI',
      case: 'unknown model',
      input: 'start <fresh> --model my-finetune',
      run: () => cli('start', fresh[4]!, '--model', 'my-finetune'),
      error: ['unknown model "my-finetune"', "set the agent's window"],
      exit: 2,
      state: { absent: fresh[4]! },
    },
    {
      surface: 'longrun CLI',
      case: 'expected turn 0',
      input: 'send OPEN hi --expect-turn 0',
      run: () => cli('send', OPEN, 'hi', '--expect-turn', '0'),
      error: ['--expect-turn: must be an integer ≥ 1 (got "0")'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'negative event limit',
      input: 'events OPEN --limit -1',
      run: () => cli('events', OPEN, '--limit', '-1'),
      error: ['--limit: must be an integer ≥ 0 (got "-1")'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'instructions over their limit',
      input: 'compact OPEN --instructions <4,001 x>',
      run: () => cli('compact', OPEN, '--instructions', x(4_001)),
      error: ['instructions: 4001 characters is over the limit of 4000'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'compact a closed agent',
      input: 'compact CLOSED',
      run: () => cli('compact', CLOSED),
      error: [`agent ${CLOSED} is closed`],
      exit: 4,
      state: { unchanged: CLOSED },
    },
    {
      surface: 'longrun CLI',
      case: 'reload another agent’s key',
      input: 'reload OPEN agents/OTHER/…/m000001.json',
      run: () => cli('reload', OPEN, otherMessageKey),
      error: [`is outside agents/${OPEN}/`],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'reload a reference with ..',
      input: 'reload OPEN agents/OPEN/../OTHER/…',
      run: () => cli('reload', OPEN, `${agentPrefix(OPEN)}../${otherMessageKey.slice('agents/'.length)}`),
      error: [`is outside agents/${OPEN}/`],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'reload a reference with control characters',
      input: 'reload OPEN "agents/OPEN/\\u0001\\n"',
      run: () => cli('reload', OPEN, `${agentPrefix(OPEN)}\u0001\n`),
      error: [`nothing is stored under "${agentPrefix(OPEN)}\\u0001\\n"`],
      exit: 1,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'reload: an agent that does not exist',
      input: 'reload nobody-… agents/nobody-…/m000001.json',
      run: () => cli('reload', NOBODY, `${agentPrefix(NOBODY)}m000001.json`),
      error: [`unknown agent ${NOBODY}: no such workflow, and nothing stored under`],
      exit: 3,
      state: { refusedBeforeStart: true },
    },
    {
      surface: 'longrun CLI',
      case: 'replay: a line that is not JSON',
      input: 'replay <user line, then {"role":>',
      run: async () => cli('replay', await recording('not-json', [user('hi'), '{"role":'])),
      error: ['line 2: not JSON'],
      exit: 2,
      state: { refusedBeforeStart: true },
    },
    {
      surface: 'longrun CLI',
      case: 'replay: an unknown role',
      input: 'replay <{"role":"root","content":"x"}>',
      run: async () => cli('replay', await recording('role', [JSON.stringify({ role: 'root', content: 'x' })])),
      error: ['line 1: role must be one of system, user, assistant, tool'],
      exit: 2,
      state: { refusedBeforeStart: true },
    },
    {
      surface: 'longrun CLI',
      case: 'replay: content of a wrong type',
      input: 'replay <{"role":"user","content":42}>',
      run: async () => cli('replay', await recording('content', [JSON.stringify({ role: 'user', content: 42 })])),
      error: ['line 1: content must be a string, an array of parts or null'],
      exit: 2,
      state: { refusedBeforeStart: true },
    },
    {
      surface: 'longrun CLI',
      case: 'replay: tool_calls that are not a list',
      input: 'replay <user, {"role":"assistant","tool_calls":"rm -rf /"}>',
      run: async () =>
        cli(
          'replay',
          await recording('tool-calls', [user('hi'), JSON.stringify({ role: 'assistant', tool_calls: 'rm -rf /' })]),
        ),
      error: ['line 2: tool_calls must be an array of function calls'],
      exit: 2,
      state: { refusedBeforeStart: true },
    },
    {
      surface: 'longrun CLI',
      case: 'replay: a tool call without a name',
      input: 'replay <user, assistant calling {"id":"c1","function":{}}>',
      run: async () =>
        cli(
          'replay',
          await recording('call-name', [
            user('hi'),
            JSON.stringify({ role: 'assistant', content: null, tool_calls: [{ id: 'c1', function: {} }] }),
          ]),
        ),
      error: ['line 2: tool_calls[0].function.name must be a string'],
      exit: 2,
      state: { refusedBeforeStart: true },
    },
    {
      surface: 'longrun CLI',
      case: 'replay: a tool result without its call id',
      input: 'replay <user, {"role":"tool","content":"x"}>',
      run: async () =>
        cli('replay', await recording('tool-id', [user('hi'), JSON.stringify({ role: 'tool', content: 'x' })])),
      error: ['line 2: tool_call_id must be a non-empty string'],
      exit: 2,
      state: { refusedBeforeStart: true },
    },
    {
      surface: 'longrun CLI',
      case: 'replay: no user message (an empty file)',
      input: 'replay <empty file>',
      run: async () => cli('replay', await recording('empty', [''])),
      error: ['has no user message'],
      exit: 2,
      state: { refusedBeforeStart: true },
    },
    {
      surface: 'longrun CLI',
      case: 'replay: a missing file',
      input: 'replay /nonexistent.jsonl',
      run: () => cli('replay', join(files, 'nonexistent.jsonl')),
      error: ['replay: cannot read', 'nonexistent.jsonl: no such file'],
      exit: 2,
      state: { refusedBeforeStart: true },
    },
    {
      surface: 'longrun CLI',
      case: 'replay --policy: a file that is not JSON',
      input: 'replay <recording> --policy <{"maxTokens":>',
      run: () => replayUnderPolicy('policy-not-json.json', '{"maxTokens":'),
      error: ['--policy:', 'policy-not-json.json is not JSON'],
      exit: 2,
      state: { refusedBeforeStart: true },
    },
    {
      surface: 'longrun CLI',
      case: 'replay --policy: a JSON array, not an object',
      input: 'replay <recording> --policy <[1]>',
      run: () => replayUnderPolicy('policy-array.json', '[1]'),
      error: ['policy-array.json must hold a JSON object of compaction policy overrides', 'not an array'],
      exit: 2,
      state: { refusedBeforeStart: true },
    },
    {
      surface: 'longrun CLI',
      case: 'replay --policy: a field out of its range',
      input: 'replay <recording> --policy <{"targetRatio":2}>',
      run: () => replayUnderPolicy('policy-range.json', '{"targetRatio":2}'),
      error: ['targetRatio: 2 is not allowed ('],
      exit: 2,
      state: { refusedBeforeStart: true },
    },
    {
      surface: 'longrun CLI',
      case: 'replay --policy: a preset other than --preset',
      input: 'replay <recording> --preset default --policy <{"preset":"octomind"}>',
      run: () => replayUnderPolicy('policy-preset.json', '{"preset":"octomind"}', '--preset', 'default'),
      error: ['names the preset octomind, --preset default: give one, or the same'],
      exit: 2,
      state: { refusedBeforeStart: true },
    },
    {
      surface: 'longrun CLI',
      case: 'unknown command',
      input: 'frobnicate OPEN',
      run: () => cli('frobnicate', OPEN),
      error: ['unknown command "frobnicate"'],
      exit: 2,
      state: { unchanged: OPEN },
    },

    {
      surface: 'longrun CLI',
      case: 'compact --review: instructions over their limit',
      input: 'compact OPEN --review --instructions <4,001 x>',
      run: () => cli('compact', OPEN, '--review', '--instructions', x(4_001)),
      error: ['instructions: 4001 characters is over the limit of 4000'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'compact --review with --no-wait',
      input: 'compact OPEN --review --no-wait',
      run: () => cli('compact', OPEN, '--review', '--no-wait'),
      error: ['--review returns a draft to read: it cannot go with --no-wait or --if-due'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'approve: a draft id that is not one',
      input: 'approve OPEN nope',
      run: () => cli('approve', OPEN, 'nope'),
      error: ['draft: must be a draft id like "draft-1" (got "nope")'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'approve: an edited summary over its limit',
      input: 'approve OPEN draft-1 --summary-file <200,001 x>',
      run: async () => cli('approve', OPEN, 'draft-1', '--summary-file', await textFile('huge-summary', x(200_001))),
      error: ['summary: 200001 characters is over the limit of 200000'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'approve: an empty edited summary',
      input: 'approve OPEN draft-1 --summary-file <" \\n">',
      run: async () => cli('approve', OPEN, 'draft-1', '--summary-file', await textFile('blank-summary', ' \n')),
      error: ['summary: must be a non-empty string (the edited summary)'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'approve: a --summary-file that cannot be read',
      input: 'approve OPEN draft-1 --summary-file /nonexistent.md',
      run: () => cli('approve', OPEN, 'draft-1', '--summary-file', join(files, 'nonexistent.md')),
      error: ['--summary-file: cannot read', 'nonexistent.md: no such file'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'approve: a draft that is not pending (only the agent knows: exit 1)',
      input: 'approve OPEN draft-9',
      run: () => cli('approve', OPEN, 'draft-9'),
      error: ['rejected: draft: draft-9 is not pending: no draft is pending'],
      exit: 1,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'discard: a draft id that is not one',
      input: 'discard OPEN draft-x',
      run: () => cli('discard', OPEN, 'draft-x'),
      error: ['draft: must be a draft id like "draft-1" (got "draft-x")'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'discard: a draft that is not pending (only the agent knows: exit 1)',
      input: 'discard OPEN draft-1',
      run: () => cli('discard', OPEN, 'draft-1'),
      error: ['rejected: draft: draft-1 is not pending: no draft is pending'],
      exit: 1,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'steer: blank text',
      input: "steer OPEN '   '",
      run: () => cli('steer', OPEN, '   '),
      error: ['text: must not be empty'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'steer --no-wait: text over its limit',
      input: 'steer OPEN <100,000 x> <100,001 x> --no-wait',
      run: () => cli('steer', OPEN, x(100_000), x(100_001), '--no-wait'),
      error: ['text: 200002 characters is over the limit of 200000'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'interrupt: text over its limit',
      input: 'interrupt OPEN <100,000 x> <100,001 x>',
      run: () => cli('interrupt', OPEN, x(100_000), x(100_001)),
      error: ['text: 200002 characters is over the limit of 200000'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'approve-tool: a call id of 257 characters',
      input: 'approve-tool OPEN <257 c>',
      run: () => cli('approve-tool', OPEN, 'c'.repeat(257)),
      error: ["callId: must be a tool call's id, 1 to 256 characters"],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'deny-tool: a reason over its limit',
      input: 'deny-tool OPEN call-1 <4,001 x>',
      run: () => cli('deny-tool', OPEN, 'call-1', x(4_001)),
      error: ['reason: 4001 characters is over the limit of 4000'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'approve-tool: a call that does not wait for approval (only the agent knows: exit 1)',
      input: 'approve-tool OPEN no-such-call',
      run: () => cli('approve-tool', OPEN, 'no-such-call'),
      error: ['rejected: ', 'no-such-call'],
      exit: 1,
      state: { unchanged: OPEN },
    },
  ];
}

describeRows('longrun CLI', 16, rows(), h);
