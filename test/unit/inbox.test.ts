/**
 * The one owner of a pending input's outcome (workflows/inbox.ts): `run` and `runNow` settle an input with its result
 * or with the failure its Update answers with, and always mark it done. The mapping: a refused draft is invalid input
 * (the agent is not told), an activity that failed for good is the Update's failure with its innermost cause (and the
 * agent records it), anything else is a bug that fails the workflow task.
 */
import { ActivityFailure, ApplicationFailure, RetryState } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { FAILURE } from '../../contract/failures.ts';
import { dispatch, DraftRefused, Inbox, pendingOf } from '../../workflows/inbox.ts';
import type { DispatchTable, Pending, PendingOf } from '../../workflows/inbox.ts';

const noReply = () => Promise.reject(new Error('no reply to read in these tests'));

function activityFailed(cause: string): ActivityFailure {
  const inner = ApplicationFailure.create({ message: cause });
  return new ActivityFailure('activity task failed', 'callModel', '7', RetryState.MAXIMUM_ATTEMPTS_REACHED, 'w', inner);
}

/** A queued input as the loop takes it, with the flag its Update's handler waits on. */
function queued<K extends Pending['kind']>(kind: K, input: PendingOf<K>['input']): PendingOf<K> {
  const pending = pendingOf(kind, input) as PendingOf<K>;
  pending.settled = { done: false };
  return pending;
}

/** Runs `work` for a new input of `kind` through a fresh inbox: the input after, the result, what the agent recorded. */
async function runOnce<K extends Pending['kind']>(
  kind: K,
  input: PendingOf<K>['input'],
  work: () => Promise<NonNullable<PendingOf<K>['result']>>,
) {
  const pending = queued(kind, input);
  const recorded: string[] = [];
  const result = await new Inbox(undefined, noReply).run(pending, work, (why) => recorded.push(why));
  return { pending, result, recorded };
}

describe('Inbox.run', () => {
  it('keeps the result and marks the input done', async () => {
    const answer = { compacted: false, reason: 'nothing to do' };
    const { pending, result, recorded } = await runOnce('compact', {}, () => Promise.resolve(answer));
    expect(result).toBe(answer);
    expect(pending.result).toBe(answer);
    expect(pending.failure).toBeUndefined();
    expect(pending.settled).toEqual({ done: true });
    expect(recorded).toEqual([]);
  });

  it('answers a refused draft as invalid input, without recording a failure in the agent', async () => {
    const refused = new DraftRefused('draft-1 is not pending (no draft is)');
    const { pending, result, recorded } = await runOnce('approve', { draft: 'draft-1' }, () => Promise.reject(refused));
    expect(result).toBeUndefined();
    expect(pending).toMatchObject({ failure: refused.message, failureType: FAILURE.invalidInput });
    expect(pending.cause).toBeUndefined();
    expect(pending.settled).toEqual({ done: true });
    expect(recorded).toEqual([]);
  });

  it('fails the Update with the innermost cause of an activity that failed for good, and the agent records it', async () => {
    const error = activityFailed('401 bad key');
    const { pending, recorded } = await runOnce('send', { text: 'hello' }, () => Promise.reject(error));
    expect(pending.failure).toBe('callModel failed: 401 bad key');
    expect(pending.failureType).toBeUndefined(); // the Update's own failure type (applyOnce's)
    expect(pending.cause).toBe(error);
    expect(recorded).toEqual(['callModel failed: 401 bad key']);
    expect(pending.settled).toEqual({ done: true });
  });

  it('throws anything else (a bug fails the workflow task), the input still marked done', async () => {
    const inbox = new Inbox(undefined, noReply);
    const pending = queued('revert', { toEvent: 1 });
    await expect(
      inbox.run(
        pending,
        () => Promise.reject(new TypeError('a bug')),
        () => undefined,
      ),
    ).rejects.toThrow('a bug');
    expect(pending.failure).toBeUndefined();
    expect(pending.settled).toEqual({ done: true });
  });

  it('frees the turn a queued message held once it is done', async () => {
    const inbox = new Inbox(undefined, noReply);
    const pending = queued('send', { text: 'hello' });
    inbox.push(pending);
    expect(inbox.nextTurn(0)).toBe(2);
    await inbox.run(
      inbox.take() as PendingOf<'send'>,
      () => Promise.reject(activityFailed('down')),
      () => undefined,
    );
    expect(inbox.nextTurn(0)).toBe(1);
  });
});

describe('Inbox.runNow', () => {
  it('settles work done at once before it returns, with the same mapping', () => {
    const inbox = new Inbox(undefined, noReply);
    const done = queued('discard', { draft: 'draft-1' });
    expect(
      inbox.runNow(
        done,
        () => ({ discarded: 'draft-1' }),
        () => undefined,
      ),
    ).toEqual({ discarded: 'draft-1' });
    expect(done).toMatchObject({ result: { discarded: 'draft-1' }, settled: { done: true } });

    const refused = queued('discard', { draft: 'draft-2' });
    const result = inbox.runNow(
      refused,
      () => {
        throw new DraftRefused('draft-2 is not pending (draft-1 discarded)');
      },
      () => undefined,
    );
    expect(result).toBeUndefined();
    expect(refused).toMatchObject({ failureType: FAILURE.invalidInput, settled: { done: true } });
  });
});

describe('dispatch', () => {
  it("hands each input to its kind's entry", async () => {
    const seen: string[] = [];
    const table: DispatchTable = {
      send: (pending) => seen.push(`send ${pending.input.text}`),
      compact: (pending) => seen.push(`compact ${pending.input.strategy ?? 'any'}`),
      revert: (pending) => seen.push(`revert ${pending.input.toEvent}`),
      approve: (pending) => seen.push(`approve ${pending.input.draft}`),
      discard: (pending) => seen.push(`discard ${pending.input.draft}`),
      configure: (pending) => seen.push(`configure ${pending.input.model ?? 'same'}`),
      steer: (pending) => seen.push(`steer ${pending.input.text}`),
      interrupt: (pending) => seen.push(`interrupt ${pending.input.text ?? ''}`),
      pin: (pending) => seen.push(`pin ${pending.input.messageId ?? pending.input.text}`),
      unpin: (pending) => seen.push(`unpin ${pending.input.pin}`),
    };
    const inputs: Pending[] = [
      pendingOf('discard', { draft: 'draft-1' }),
      pendingOf('send', { text: 'hi' }),
      pendingOf('revert', { toEvent: 2 }),
      pendingOf('compact', {}),
      pendingOf('approve', { draft: 'draft-2' }),
      pendingOf('configure', { model: 'gpt-4o' }),
      pendingOf('steer', { text: 'also check b' }),
      pendingOf('interrupt', { text: 'stop' }),
    ];
    for (const pending of inputs) await dispatch(table, pending);
    expect(seen).toEqual([
      'discard draft-1',
      'send hi',
      'revert 2',
      'compact any',
      'approve draft-2',
      'configure gpt-4o',
      'steer also check b',
      'interrupt stop',
    ]);
  });
});

describe('inputs at a step boundary', () => {
  const inbox = () => new Inbox(undefined, () => Promise.resolve(''));

  it('takes an interrupt first, then does the queued work in arrival order and hands the turn its steers, leaving messages and configure in place', async () => {
    const box = inbox();
    const done: string[] = [];
    const record = (pending: { kind: string }) => void done.push(pending.kind);
    const kinds = [
      'send',
      'compact',
      'revert',
      'approve',
      'discard',
      'configure',
      'steer',
      'interrupt',
      'pin',
      'unpin',
    ];
    box.serve(Object.fromEntries(kinds.map((kind) => [kind, record])) as unknown as DispatchTable);
    box.push(pendingOf('send', { text: 'next task' }));
    box.push(pendingOf('compact', {}));
    box.push(pendingOf('configure', { window: 9_000 }));
    box.push(pendingOf('steer', { text: 'look at b' }));
    box.push(pendingOf('interrupt', {}));
    expect(box.boundaryQueued).toBe(true);
    expect(box.interruptQueued).toBe(true);
    const first = await box.atBoundary();
    expect(first.interrupt?.kind).toBe('interrupt');
    expect(first.steers).toEqual([]);
    expect(done).toEqual([]); // the interrupt ends the turn before anything queued behind it is done
    const second = await box.atBoundary();
    expect(second.interrupt).toBeUndefined();
    expect(second.steers.map((steer) => steer.input.text)).toEqual(['look at b']);
    expect(done).toEqual(['compact']);
    expect(box.boundaryQueued).toBe(false);
    expect([box.take()?.kind, box.take()?.kind, box.take()]).toEqual(['send', 'configure', undefined]);
  });

  it('answers a steer where it landed through the one settling path, and takes a queued interrupt', () => {
    const box = inbox();
    const steer = pendingOf('steer', { text: 'look at b' }) as PendingOf<'steer'>;
    steer.settled = { done: false };
    box.answer(steer, { turn: 2, step: 3, messageId: 'm000009', opened: false });
    expect(steer.settled.done).toBe(true);
    expect(steer.result).toEqual({ turn: 2, step: 3, messageId: 'm000009', opened: false });
    expect(box.takeInterrupt()).toBeUndefined();
    box.push(pendingOf('compact', {}));
    box.push(pendingOf('interrupt', { text: 'stop' }));
    expect(box.takeInterrupt()?.input).toEqual({ text: 'stop' });
    expect(box.interruptQueued).toBe(false);
    expect(box.take()?.kind).toBe('compact');
  });

  it("queues an interrupt's text ahead of every other message, counted as a message", () => {
    const box = inbox();
    box.push(pendingOf('send', { text: 'queued first' }));
    expect(box.openNext('from the interrupt', 3)).toBe(4);
    expect(box.nextTurn(3)).toBe(6);
    expect((box.take()?.input as { text: string }).text).toBe('from the interrupt');
  });
});
