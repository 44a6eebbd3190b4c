/**
 * `longrun watch <agent>`: follows an agent live from its `progress` query (and, while a summary is written, the
 * summarizeSpan activity's heartbeat details: `agentProgress` in client/reads.ts), polled: a line for each turn and compaction that
 * completes, and the step in progress (the turn's model call, the compaction's step, the summary's chunk k of n with
 * a bar) as one updating line on a terminal, or a line per change in a pipe; `--json` prints one JSON object per
 * change. Ends on Ctrl-C, or when the agent closes.
 *
 * What to print is decided by pure functions ({@link changesOf}, {@link phaseOf}, {@link renderChange}), unit-tested;
 * {@link watchAgent} only polls and writes.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { WorkflowNotFoundError } from '@temporalio/client';
import type {
  AgentProgress,
  ApprovalProgress,
  CompactionProgress,
  ReviewProgress,
  TurnProgress,
} from '../contract/progress.ts';
import type { CompactionEventSummary } from '../contract/results.ts';
import { describeApproval, describeCompaction, describeReview } from '../contract/progress.ts';
import type { StreamedItem } from '../client/stream.ts';

/** How long a watch that ends waits for its live stream to stop. */
const STREAM_END_WAIT_MS = 1_000;

/** Something that happened between two polls. */
export type WatchChange =
  | { type: 'watching'; progress: AgentProgress }
  | {
      type: 'turn';
      turn: number;
      contextTokens: number;
      window: number;
      reply?: string;
      /** The turn ended with no new answer of the model in the context (interrupted, or stopped at its budget). */
      noReply?: true;
    }
  | { type: 'compaction'; event: CompactionEventSummary }
  | {
      type: 'phase';
      turn?: TurnProgress;
      compaction?: CompactionProgress;
      review?: ReviewProgress;
      awaitingApproval?: ApprovalProgress[];
    }
  | { type: 'error'; error: string }
  | { type: 'closed'; turns: number };

/** What changed from `before` (undefined: the first poll) to `now`, in the order to print it. */
export function changesOf(before: AgentProgress | undefined, now: AgentProgress): WatchChange[] {
  if (!before) {
    return [
      { type: 'watching', progress: now },
      ...(inPhase(now) ? [phaseChange(now)] : []),
      ...(now.status === 'closed' ? [{ type: 'closed' as const, turns: now.turns }] : []),
    ];
  }
  const changes: WatchChange[] = [];
  // Compactions first: one that ran before a turn's model call ended before the turn did.
  if (now.compactions > before.compactions && now.lastCompaction) {
    changes.push({ type: 'compaction', event: now.lastCompaction });
  }
  if (now.turns > before.turns) {
    const newReply = now.lastReply !== undefined && now.lastReply.id !== before.lastReply?.id;
    changes.push({
      type: 'turn',
      turn: now.turns,
      contextTokens: now.contextTokens,
      window: now.window,
      ...(newReply ? { reply: now.lastReply!.preview } : { noReply: true as const }),
    });
  }
  if (now.lastError && now.lastError !== before.lastError) changes.push({ type: 'error', error: now.lastError });
  if (phaseKey(now) !== phaseKey(before)) changes.push(phaseChange(now));
  if (now.status === 'closed') changes.push({ type: 'closed', turns: now.turns });
  return changes;
}

/**
 * The poll `now` with the summary's chunk of the poll before when it has none of its own for the same compaction
 * step: the activity may have ended (no heartbeat to read) a moment before the workflow moved on.
 */
export function withChunkCarried(before: AgentProgress | undefined, now: AgentProgress): AgentProgress {
  const was = before?.compaction;
  const is = now.compaction;
  if (!was || !is || is.chunk !== undefined || was.chunk === undefined) return now;
  if (was.seq !== is.seq || was.step !== is.step) return now;
  return { ...now, compaction: { ...is, chunk: was.chunk, chunks: was.chunks! } };
}

/** Whether anything is in progress: a turn, a compaction, a draft or tool calls waiting. */
function inPhase(progress: Pick<AgentProgress, 'turn' | 'compaction' | 'review' | 'awaitingApproval'>): boolean {
  return Boolean(progress.turn || progress.compaction || progress.review || progress.awaitingApproval?.length);
}

function phaseChange(progress: AgentProgress): WatchChange {
  return {
    type: 'phase',
    ...(progress.turn ? { turn: progress.turn } : {}),
    ...(progress.compaction ? { compaction: progress.compaction } : {}),
    ...(progress.review ? { review: progress.review } : {}),
    ...(progress.awaitingApproval?.length ? { awaitingApproval: progress.awaitingApproval } : {}),
  };
}

/** What identifies the step in progress (the elapsed time left out): a change of it is a line in a pipe. */
function phaseKey(progress: AgentProgress): string {
  const { turn, compaction, review, awaitingApproval } = progress;
  return JSON.stringify([
    review?.draft,
    awaitingApproval?.map((call) => call.callId),
    turn?.turn,
    turn?.step,
    compaction?.seq,
    compaction?.step,
    compaction?.chunk,
    compaction?.chunks,
  ]);
}

const grouped = (n: number) => n.toLocaleString('en-US');

function context(tokens: number, window: number): string {
  const percent = window > 0 ? ` (${Math.round((100 * tokens) / window)}%)` : '';
  return `context ${grouped(tokens)} of ${grouped(window)} tokens${percent}`;
}

/** A bar of `width` cells, `done` of `total` filled. */
export function progressBar(done: number, total: number, width = 20): string {
  const filled = total > 0 ? Math.round((width * Math.min(done, total)) / total) : 0;
  return `[${'█'.repeat(filled)}${'░'.repeat(width - filled)}]`;
}

/** One line for a compaction that completed: tokens before and after, strategies, time, and the loop guard. */
function compactionLine(event: CompactionEventSummary): string {
  const guard = event.loopGuard;
  return [
    `compaction ${event.seq} (${event.trigger}): ${grouped(event.tokensBefore)} → ${grouped(event.tokensAfter)} tokens`,
    `(${event.strategies.join(', ')}) in ${(event.durationMs / 1000).toFixed(1)} s`,
    ...(guard?.ineffective
      ? [`· ineffective (${(100 * guard.savedShare).toFixed(1)}% saved, ${guard.inARow} in a row)`]
      : []),
    ...(guard?.paused ? [`· automatic compaction paused until ${grouped(guard.pausedUntil!)} tokens`] : []),
  ].join(' ');
}

/**
 * The step in progress in one line: the turn and its model call, the compaction and its step, the summary's chunk
 * with a bar; the draft waiting for review and its timeout; `idle` when nothing runs. `nowMs`: the client's clock, for
 * the time spent so far (a terminal only); `reviewNowMs`: for the time left until the review's timeout.
 */
export function phaseOf(
  progress: Pick<AgentProgress, 'turn' | 'compaction' | 'review' | 'awaitingApproval'>,
  nowMs?: number,
  reviewNowMs = nowMs,
  agentId?: string,
): string {
  const since = (iso: string) =>
    nowMs === undefined ? '' : ` · ${Math.max(0, Math.round((nowMs - Date.parse(iso)) / 1000))} s`;
  const parts: string[] = [];
  if (progress.turn)
    parts.push(`turn ${progress.turn.turn} · model call ${progress.turn.step}${since(progress.turn.began)}`);
  const compaction = progress.compaction;
  if (compaction) {
    const bar =
      compaction.chunk !== undefined && compaction.chunks !== undefined
        ? ` ${progressBar(compaction.chunk - 1, compaction.chunks)}`
        : '';
    parts.push(`${describeCompaction(compaction)}${bar}${since(compaction.began)}`);
  }
  // The draft of an automatic compaction waiting for review: the time left by the client's clock, when it has one.
  if (progress.review) parts.push(describeReview(progress.review, reviewNowMs));
  for (const call of progress.awaitingApproval ?? []) parts.push(approvalPhase(call, reviewNowMs, agentId));
  return parts.length > 0 ? parts.join(' | ') : 'idle';
}

/**
 * A tool call waiting for approval in the phase line: the tool, its call id, the time left by the client's clock
 * (when it has one) and what then, and the commands that answer it (for `agentId`).
 */
function approvalPhase(call: ApprovalProgress, nowMs: number | undefined, agentId: string | undefined): string {
  if (agentId !== undefined && nowMs === undefined) return describeApproval(call, agentId);
  const then = call.onTimeout === 'approve' ? 'approved' : 'denied';
  const left = Math.max(0, Math.round((Date.parse(call.until) - (nowMs ?? Date.now())) / 1000));
  const inWords = left >= 60 ? `${Math.floor(left / 60)} min ${left % 60} s` : `${left} s`;
  const answer =
    agentId !== undefined
      ? `: longrun approve-tool ${agentId} ${call.callId} | longrun deny-tool ${agentId} ${call.callId} [reason]`
      : '';
  return `tool ${call.tool} (${call.callId}) awaits approval (${inWords} left, then ${then})${answer}`;
}

/** A change as `longrun watch` prints it (without --json). */
export function renderChange(change: WatchChange, agentId: string, nowMs?: number): string {
  switch (change.type) {
    case 'watching': {
      const p = change.progress;
      return (
        `watching ${agentId}: ${p.turns} turns, ${context(p.contextTokens, p.window)}, ${p.compactions} compactions` +
        (p.queued > 0 ? `, ${p.queued} queued` : '') +
        (p.pausedUntil !== undefined ? `; automatic compaction paused until ${grouped(p.pausedUntil)} tokens` : '')
      );
    }
    case 'turn':
      return (
        `turn ${change.turn} done · ${context(change.contextTokens, change.window)}` +
        (change.reply !== undefined
          ? ` · reply: ${JSON.stringify(change.reply.slice(0, 80))}`
          : change.noReply
            ? ' · no new reply from the model (interrupted, or stopped at its budget)'
            : '')
      );
    case 'compaction':
      return compactionLine(change.event);
    case 'phase':
      return phaseOf(change, undefined, nowMs, agentId);
    case 'error':
      return `error: ${change.error}`;
    case 'closed':
      return `agent ${agentId} closed after ${change.turns} turns`;
  }
}

export interface WatchOptions {
  /** Between two polls, in ms. */
  intervalMs: number;
  json: boolean;
  /** Where the lines go, and whether it is a terminal (one updating line for the step in progress). */
  write: (text: string) => void;
  isTTY: boolean;
  /** Notes (an agent that does not answer) go here, each once. */
  note: (line: string) => void;
  /** Aborted on Ctrl-C: the watch ends. */
  signal: AbortSignal;
  /**
   * The agent's live stream from now on (client/stream.ts `streamAgent`): the model's text as it is written, tool
   * calls, steers, interrupts and approvals, printed as they come besides the polled phases. Stops with `signal`.
   * `from`: the offset to go on from when it is opened again (absent: from now on).
   */
  stream?: (signal: AbortSignal, from?: number) => AsyncIterable<StreamedItem>;
}

/**
 * What the watch prints of a stream item: `text` to write on the open line of model output (opened with `open`
 * when none is), `line` for a line of its own, or nothing (what the polled phases already show: compaction steps,
 * turn ends, a model call's start and end).
 */
export function streamOutputOf(item: StreamedItem): { text: string; open?: string } | { line: string } | undefined {
  if (item.superseded) return undefined;
  switch (item.kind) {
    case 'text':
      return { text: item.text, open: '» ' };
    case 'tool-call-delta':
      return item.name !== undefined
        ? { text: item.arguments, open: `» ${item.name} ` }
        : { text: item.arguments, open: '» … ' };
    case 'superseded':
      return { line: `(model call ${item.call} retried, attempt ${item.attempt}: the output above is superseded)` };
    case 'tool-call':
      return { line: `running ${item.name}` };
    case 'tool-result':
      return {
        line: `${item.name} answered ${item.chars.toLocaleString('en-US')} chars: ${item.preview.split('\n')[0]!.slice(0, 100)}`,
      };
    case 'steer':
      return { line: `steer at turn ${item.turn} step ${item.step}: ${item.text}` };
    case 'interrupted':
      return { line: `interrupted${item.turn !== undefined ? ` turn ${item.turn}` : ''}: ${item.reason}` };
    case 'approval-asked':
      return { line: `approval asked: ${item.name} ${item.arguments} (call ${item.callId})` };
    case 'approval-answered':
      return {
        line: `${item.approved ? 'approved' : 'denied'} call ${item.callId}${item.reason ? `: ${item.reason}` : ''}`,
      };
    default:
      return undefined;
  }
}

/**
 * Follows the agent until it closes (`closed`; `was-closed` when it was closed from the start) or `signal` aborts
 * (`stopped`). `poll` asks the agent (in the CLI: {@link agentProgress}).
 */
export async function watchAgent(
  poll: () => Promise<AgentProgress>,
  agentId: string,
  options: WatchOptions,
): Promise<'closed' | 'stopped' | 'was-closed'> {
  const { write, isTTY, json, signal } = options;
  let before: AgentProgress | undefined;
  let status = ''; // the updating line on a terminal
  let lastNote = '';
  const clearStatus = () => {
    if (status) write('\r\x1b[2K');
    status = '';
  };
  let textOpen = false; // a line of model output is being written
  let textCall = '';
  const endText = () => {
    if (textOpen) write('\n');
    textOpen = false;
  };
  const print = (line: string) => {
    clearStatus();
    endText();
    write(`${line}\n`);
  };
  // The live stream, besides the polls: model output as it is written.
  const streamStop = new AbortController();
  const stopStream = () => streamStop.abort();
  signal.addEventListener('abort', stopStream, { once: true });
  const show = (item: StreamedItem) => {
    if (json) {
      print(JSON.stringify({ type: 'stream', item }));
      return;
    }
    const output = streamOutputOf(item);
    if (!output) {
      if (item.kind === 'model-end') endText();
      return;
    }
    if ('line' in output) {
      print(output.line);
      return;
    }
    const call = `${'call' in item ? item.call : ''}:${item.kind === 'tool-call-delta' ? item.index : 'text'}`;
    if (textOpen && (call !== textCall || (item.kind === 'tool-call-delta' && item.name !== undefined))) endText();
    if (!textOpen) {
      clearStatus();
      write(output.open ?? '');
      textOpen = true;
      textCall = call;
    }
    write(output.text);
  };
  // A stream that stops (no worker answered the question that finds the agent's life, storage out of reach) is
  // opened again from the item after the last one shown: said once, nothing shown twice, nothing skipped.
  const follow = async (stream: NonNullable<WatchOptions['stream']>) => {
    let from: number | undefined;
    let said = '';
    while (!streamStop.signal.aborted) {
      try {
        for await (const item of stream(streamStop.signal, from)) {
          from = item.offset + 1;
          said = '';
          show(item);
        }
        return;
      } catch (error) {
        if (streamStop.signal.aborted || error instanceof WorkflowNotFoundError) return; // the polls say so
        const why = error instanceof Error ? error.message : String(error);
        const note = `watch ${agentId}: the live stream stopped (${why}); opening it again`;
        if (note !== said) options.note(note);
        said = note;
        await sleep(options.intervalMs, undefined, { signal: streamStop.signal }).catch(() => undefined);
      }
    }
  };
  const streaming = options.stream ? follow(options.stream) : undefined;
  try {
    while (!signal.aborted) {
      let now: AgentProgress;
      try {
        now = withChunkCarried(before, await poll());
      } catch (error) {
        if (error instanceof WorkflowNotFoundError || signal.aborted) throw error;
        // No worker answers queries (or the server restarts): say so once, and keep asking.
        const note = `watch ${agentId}: no answer (${error instanceof Error ? error.message : String(error)}); asking again`;
        if (note !== lastNote) options.note(note);
        lastNote = note;
        await sleep(options.intervalMs, undefined, { signal }).catch(() => undefined);
        continue;
      }
      lastNote = '';
      for (const change of changesOf(before, now)) {
        if (json) print(JSON.stringify(change));
        else if (change.type !== 'phase') print(renderChange(change, agentId));
        else if (!isTTY && inPhase(change)) {
          print(renderChange(change, agentId, Date.now()));
        }
      }
      if (now.status === 'closed') return before ? 'closed' : 'was-closed';
      if (isTTY && !json && !textOpen) {
        const line = phaseOf(now, Date.now(), Date.now(), agentId);
        write(`\r\x1b[2K${line}`);
        status = line;
      }
      before = now;
      await sleep(options.intervalMs, undefined, { signal }).catch(() => undefined);
    }
    return 'stopped';
  } finally {
    signal.removeEventListener('abort', stopStream);
    streamStop.abort();
    // What the stream has in hand is printed; a stream still finding the agent's life is not waited for long.
    if (streaming) await Promise.race([streaming, sleep(STREAM_END_WAIT_MS)]);
    endText();
    clearStatus();
  }
}
