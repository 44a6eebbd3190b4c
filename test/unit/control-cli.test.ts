/**
 * Reaching an agent while it works, without a server: the command lines of steer, interrupt, tools, approve-tool and
 * deny-tool (what is refused before anything is sent), how their results read, what `state` and `watch` show of tool
 * calls awaiting approval and of a turn that ended without a reply, chat's Ctrl-C, and the client library's checks.
 */
import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { approveTool, denyTool, interruptAgent, steerAgent } from '../../client/control.ts';
import { AgentUpdateError } from '../../client/update-errors.ts';
import { run, UsageError } from '../../commands/cli/main.ts';
import { ChatKeys } from '../../commands/cli/chat-keys.ts';
import { sentControlFate } from '../../commands/cli/control-commands.ts';
import { shownReply, stoppedNote } from '../../commands/cli/agent-commands.ts';
import { REPLAYED_LABEL, replayedModelName } from '../../llm/replayed-model.ts';
import { interruptedReply } from '../../contract/results.ts';
import type { SendResult } from '../../contract/results.ts';
import { synopsis } from '../../commands/cli/parse.ts';
import { COMMANDS } from '../../commands/cli/table.ts';
import {
  renderApprovals,
  renderInterrupt,
  renderState,
  renderSteer,
  renderToolDecision,
} from '../../commands/render.ts';
import { changesOf, phaseOf, renderChange } from '../../commands/watch.ts';
import { InvalidInputError } from '../../contract/inputs.ts';
import type { AgentProgress, ApprovalProgress } from '../../contract/progress.ts';
import type { AgentState } from '../../contract/state.ts';
import { SAME_PRESS_MS } from '../../worker/stopping.ts';

const NOW = Date.parse('2026-01-01T00:10:00.000Z');
const waiting: ApprovalProgress = {
  callId: 'call-7',
  tool: 'delete_files',
  arguments: '{"glob":"build/**"}',
  since: '2026-01-01T00:09:00.000Z',
  until: '2026-01-01T00:14:10.000Z',
  onTimeout: 'deny',
};

describe('the command lines', () => {
  it('usage lines: the text of interrupt and the reason of deny-tool may be left out', () => {
    expect(synopsis('steer', COMMANDS.steer)).toBe('steer <agent> <text...>');
    expect(synopsis('interrupt', COMMANDS.interrupt)).toBe('interrupt <agent> [text...]');
    expect(synopsis('tools', COMMANDS.tools)).toBe('tools <agent>');
    expect(synopsis('approve-tool', COMMANDS['approve-tool'])).toBe('approve-tool <agent> <callId>');
    expect(synopsis('deny-tool', COMMANDS['deny-tool'])).toBe('deny-tool <agent> <callId> [reason...]');
  });

  it('names a missing argument, and refuses one more than approve-tool takes', async () => {
    await expect(run(['steer', 'a1'])).rejects.toThrow(new UsageError('steer: missing <text>'));
    await expect(run(['approve-tool', 'a1'])).rejects.toThrow(
      new UsageError('approve-tool: missing <callId> (the id longrun tools printed)'),
    );
    await expect(run(['deny-tool', 'a1'])).rejects.toThrow(
      new UsageError('deny-tool: missing <callId> (the id longrun tools printed)'),
    );
    await expect(run(['approve-tool', 'a1', 'call-1', 'because'])).rejects.toThrow(
      new UsageError('approve-tool: unexpected argument "because" (usage: longrun approve-tool <agent> <callId>)'),
    );
    await expect(run(['tools', 'a1', '--no-wait'])).rejects.toThrow(
      new UsageError('tools: --no-wait is not an option of this command (its options: --json)'),
    );
  });

  it('refuses before sending what the workflow would refuse, naming the field and the limit (exit 2)', async () => {
    await expect(run(['steer', 'a1', '   '])).rejects.toThrow(new UsageError('text: must not be empty'));
    await expect(run(['steer', 'a1', 'x'.repeat(200_001), '--no-wait'])).rejects.toThrow(
      new UsageError('text: 200001 characters is over the limit of 200000'),
    );
    await expect(run(['interrupt', 'a1', 'x'.repeat(200_001)])).rejects.toThrow(
      new UsageError('text: 200001 characters is over the limit of 200000'),
    );
    await expect(run(['deny-tool', 'a1', 'call-1', 'x'.repeat(4_001)])).rejects.toThrow(
      new UsageError('reason: 4001 characters is over the limit of 4000'),
    );
    await expect(run(['approve-tool', 'a1', 'c'.repeat(257)])).rejects.toThrow(
      /^callId: must be a tool call's id, 1 to 256 characters/,
    );
  });
});

describe('what the commands print', () => {
  it('where a steer landed, or the turn it opened', () => {
    expect(renderSteer({ turn: 3, step: 12, messageId: 'm000040', opened: false })).toBe(
      'steer landed in turn 3 at step 12 (message m000040)',
    );
    expect(renderSteer({ turn: 4, step: 1, messageId: 'm000051', opened: true })).toBe(
      'steer opened turn 4 (the agent was idle): message m000051, step 1',
    );
  });

  it('what an interrupt did: the turn and step it ended at, the turn its text opens, nothing on an idle agent', () => {
    expect(renderInterrupt({ interrupted: true, turn: 3, step: 12, reason: 'interrupted' })).toBe(
      'turn 3 interrupted at step 12',
    );
    expect(renderInterrupt({ interrupted: true, turn: 3, step: 2, reason: 'interrupted', opens: 4 })).toBe(
      'turn 3 interrupted at step 2; turn 4 opens with the text',
    );
    expect(renderInterrupt({ interrupted: false, reason: 'no turn in progress' })).toBe(
      'nothing to interrupt: no turn in progress',
    );
  });

  it('tools: each call with its arguments, the time left and what then, and the commands that answer it', () => {
    expect(renderApprovals([], 'a1', NOW)).toBe('no tool call of a1 awaits approval');
    expect(renderApprovals([waiting, { ...waiting, callId: 'call-8', onTimeout: 'approve' }], 'a1', NOW)).toBe(
      [
        'call-7  tool delete_files, waiting since 2026-01-01T00:09:00.000Z',
        '  arguments: {"glob":"build/**"}',
        '  4 min 10 s left: at 2026-01-01T00:14:10.000Z it is denied (the model sees it was not approved)',
        '  approve: longrun approve-tool a1 call-7',
        '  deny:    longrun deny-tool a1 call-7 [reason]',
        '',
        'call-8  tool delete_files, waiting since 2026-01-01T00:09:00.000Z',
        '  arguments: {"glob":"build/**"}',
        '  4 min 10 s left: at 2026-01-01T00:14:10.000Z it is approved and runs',
        '  approve: longrun approve-tool a1 call-8',
        '  deny:    longrun deny-tool a1 call-8 [reason]',
      ].join('\n'),
    );
  });

  it('approve-tool and deny-tool say what became of the call', () => {
    expect(renderToolDecision({ callId: 'call-7', tool: 'delete_files', decision: 'approved' })).toBe(
      'approved call-7 (tool delete_files): it runs now',
    );
    expect(renderToolDecision({ callId: 'call-7', tool: 'delete_files', decision: 'denied' }, 'not on main')).toBe(
      'denied call-7 (tool delete_files): the model sees that it was denied, with the reason "not on main"',
    );
  });

  it('state: status awaiting-approval and each call waiting, with the commands; steer and interrupt signals dropped', () => {
    const state = {
      agentId: 'a1',
      status: 'running',
      shownStatus: 'awaiting-approval',
      model: 'gpt-4o-mini',
      contextTokens: 900,
      modelInfo: { window: 128_000 },
      turns: 2,
      messages: [{ id: 'm000003', role: 'user', steer: true, tokens: 4, chars: 11, preview: 'Skip Tromsø', key: 'k' }],
      droppedSignals: { steer: 2, interrupt: 1 },
      awaitingApproval: [waiting],
    } as unknown as AgentState;
    const shown = renderState(state, { now: NOW });
    expect(shown).toContain('status   awaiting-approval');
    expect(shown).toContain(
      'approval call-7: tool delete_files({"glob":"build/**"}) waits: 4 min 10 s left, then denied ' +
        '(at 2026-01-01T00:14:10.000Z)\n' +
        '         approve: longrun approve-tool a1 call-7\n' +
        '         deny:    longrun deny-tool a1 call-7 [reason]',
    );
    expect(shown).toContain('dropped  invalid signals: 2 steer, 1 interrupt');
    expect(shown).toMatch(/^m000003 +user \(steer\) +4 +11 +Skip Tromsø$/m);
  });

  it('send: an interrupted turn’s reply is longrun’s own (never labelled as a replayed model’s), with a note', () => {
    const result = {
      turn: 3,
      reply: interruptedReply(3, 12),
      interrupted: { step: 12 },
      servedBy: replayedModelName('gpt-4o-mini'),
    } as SendResult;
    expect(shownReply(result)).toBe(interruptedReply(3, 12));
    expect(stoppedNote(result)).toBe(
      'longrun: turn 3 was interrupted at step 12 (longrun interrupt, or Ctrl-C in longrun chat); send another ' +
        'message to go on',
    );
    expect(shownReply({ ...result, interrupted: undefined, reply: 'hi' })).toBe(`${REPLAYED_LABEL} hi`);
  });

  it('Ctrl-C while steer or interrupt waits: what became of it', () => {
    expect(sentControlFate('a1', 'steer', 'u-1', 'accepted')).toBe(
      'the steer was delivered to a1 (update u-1) and takes effect: do not send it again; ' +
        '`longrun watch a1` follows the agent',
    );
    expect(sentControlFate('a1', 'interrupt', 'u-2', 'not found')).toBe(
      'the interrupt sent as update u-2 is not on the server: a1 did not get it; send it again',
    );
  });
});

describe('watch', () => {
  const idle: AgentProgress = {
    agentId: 'a1',
    status: 'running',
    turns: 2,
    queued: 0,
    contextTokens: 900,
    window: 8_000,
    compactions: 0,
    lastReply: { id: 'm000004', preview: 'the answer' },
  };
  const turn = { turn: 3, step: 4, began: '2026-01-01T00:08:00.000Z' };

  it('a call awaiting approval is a phase of its own: the tool, the time left, what then, the commands', () => {
    const now: AgentProgress = { ...idle, turn, awaitingApproval: [waiting] };
    const [change] = changesOf({ ...idle, turn }, now);
    expect(change).toEqual({ type: 'phase', turn, awaitingApproval: [waiting] });
    expect(renderChange(change!, 'a1', NOW)).toBe(
      'turn 3 · model call 4 | tool delete_files (call-7) awaits approval (4 min 10 s left, then denied): ' +
        'longrun approve-tool a1 call-7 | longrun deny-tool a1 call-7 [reason]',
    );
    expect(phaseOf({ awaitingApproval: [waiting] }, NOW)).toBe(
      'tool delete_files (call-7) awaits approval (4 min 10 s left, then denied)',
    );
    // Answered: the phase changes back.
    expect(changesOf(now, { ...idle, turn })).toEqual([{ type: 'phase', turn }]);
  });

  it('a turn that ended with no new answer of the model (an interrupt) does not show the last reply as its own', () => {
    const ended: AgentProgress = { ...idle, turns: 3 };
    const [change] = changesOf({ ...idle, turn }, ended);
    expect(change).toMatchObject({ type: 'turn', turn: 3, noReply: true });
    expect(renderChange(change!, 'a1')).toBe(
      'turn 3 done · context 900 of 8,000 tokens (11%) · no new reply from the model (interrupted, or stopped at its budget)',
    );
    const answered = changesOf({ ...idle, turn }, { ...ended, lastReply: { id: 'm000009', preview: 'new' } });
    expect(answered[0]).toMatchObject({ type: 'turn', reply: 'new' });
  });
});

describe("chat's Ctrl-C", () => {
  let clock = 0;
  const keys = () => {
    const said: string[] = [];
    const interrupts: number[] = [];
    let left = 0;
    const k = new ChatKeys({
      interrupt: () => {
        interrupts.push(clock);
        return Promise.resolve({ interrupted: true });
      },
      note: (line) => said.push(line),
      leave: () => left++,
      now: () => clock,
    });
    return { k, said, interrupts, left: () => left };
  };
  const later = () => (clock += SAME_PRESS_MS + 10);

  it('during a turn interrupts it once; a second press leaves; copies of one press count once', async () => {
    const { k, said, interrupts, left } = keys();
    k.sending();
    k.sent();
    later();
    k.press();
    k.press(); // npm's copy of the same press
    expect(interrupts).toHaveLength(1);
    expect(left()).toBe(0);
    expect(said).toEqual(['interrupting the turn in progress (Ctrl-C again leaves the chat)']);
    later();
    k.press();
    expect(left()).toBe(1);
    expect(said.at(-1)).toBe('left the chat; the interrupt was sent');
    await expect(k.turnEnded()).resolves.toEqual({ interrupted: true });
  });

  it('between turns leaves; before the message is sent leaves saying nothing was delivered', () => {
    const idle = keys();
    later();
    idle.k.press();
    expect([idle.left(), idle.interrupts.length]).toEqual([1, 0]);
    const sending = keys();
    sending.k.sending();
    later();
    sending.k.press();
    expect(sending.left()).toBe(1);
    expect(sending.said).toEqual(['left before the message was sent: nothing was delivered']);
  });

  it('a turn that ended: the next press leaves, and the interrupt of the turn before is not reported again', () => {
    const { k, left } = keys();
    k.sending();
    k.sent();
    later();
    k.press();
    expect(k.turnEnded()).toBeDefined();
    expect(k.turnEnded()).toBeUndefined();
    later();
    k.press();
    expect(left()).toBe(1);
  });
});

describe('the client library checks before sending', () => {
  const noClient = {} as Client; // nothing may be sent: a call on it would throw a TypeError

  it('steer and interrupt: bad text is the validator’s refusal (InvalidInput), or InvalidInputError as a Signal', async () => {
    const refused = await steerAgent(noClient, 'a1', '').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AgentUpdateError);
    expect(refused).toMatchObject({ type: 'InvalidInput', update: 'steer', message: 'text: must not be empty' });
    await expect(steerAgent(noClient, 'a1', ' ', { wait: false })).rejects.toThrow(
      new InvalidInputError('text: must not be empty'),
    );
    await expect(interruptAgent(noClient, 'a1', { text: 'x'.repeat(200_001) })).rejects.toMatchObject({
      type: 'InvalidInput',
      update: 'interrupt',
      message: 'text: 200001 characters is over the limit of 200000',
    });
  });

  it('approveTool and denyTool: a call id that cannot be one, a reason over its limit', async () => {
    await expect(approveTool(noClient, 'a1', '')).rejects.toMatchObject({
      type: 'InvalidInput',
      update: 'approveTool',
      message: 'callId: must be a tool call\'s id, 1 to 256 characters (got "")',
    });
    await expect(denyTool(noClient, 'a1', 'call-1', 'x'.repeat(4_001))).rejects.toMatchObject({
      type: 'InvalidInput',
      update: 'denyTool',
      message: 'reason: 4001 characters is over the limit of 4000',
    });
  });
});
