/**
 * What the Temporal UI and `longrun list` show of an agent: its search attributes and its current details. Never
 * message content. Each function is called at one point of the workflow (the order of these commands is part of
 * every recorded history).
 */
import { pinBudgetOf, pinnedTokensOf } from '../contract/pins.ts';
import { patched, setCurrentDetails, upsertMemo, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { CompactionEventSummary } from '../contract/results.ts';
import { costLine, formatUsd, shownStatusOf, summaryCallNote } from '../contract/state.ts';
import { totalCostOf } from '../engine/pricing.ts';
import type { WorkflowState } from '../contract/state.ts';
import { SEARCH_ATTRIBUTES, TURNS_MEMO } from '../contract/search-attributes.ts';
import { describeCompaction } from '../contract/progress.ts';
import type { ApprovalProgress } from '../contract/progress.ts';
import type { Progress } from './progress.ts';

/**
 * Runs recorded before the patch `exact-list-figures` upserted AgentContextTokens after a turn when the context had
 * moved by this share of the window since it was shown.
 */
const SEARCH_TOKENS_STEP = 0.02;
/** AgentCost is upserted when the cost has grown by this share of the cost shown (or with AgentContextTokens). */
const SEARCH_COST_STEP = 0.02;

/** A new (or reopened) agent: running, on its model. */
export function showStarted(model: string): void {
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.status, value: 'running' },
    { key: SEARCH_ATTRIBUTES.model, value: model },
  ]);
}

/**
 * After a turn: the context's tokens when they changed (so `longrun list` shows what `longrun state` does), the cost in
 * steps of 2% of itself (or with the tokens), the turns (a memo) and the details. One upsert a turn at most: a
 * visibility write (measured: BENCHMARKS.md, The agent, session 3), small beside a model call.
 */
export function showTurn(state: WorkflowState, progress: Progress): void {
  const attributes = workflowInfo().typedSearchAttributes;
  const shown = attributes.get(SEARCH_ATTRIBUTES.contextTokens);
  const updates: SearchAttributeUpdatePair[] = [];
  const moved = patched(EXACT_LIST_FIGURES_PATCH)
    ? state.contextTokens !== shown
    : Math.abs(state.contextTokens - (shown ?? 0)) >= SEARCH_TOKENS_STEP * state.modelInfo!.window;
  if (shown === undefined || moved) {
    updates.push({ key: SEARCH_ATTRIBUTES.contextTokens, value: state.contextTokens });
  }
  // The cost, when it is known, in the same upsert (one command a turn at most): when it has grown by 2% of itself
  // since it was shown (so an agent's upserts thin out as it ages), or rides along when the tokens are upserted.
  const cost = state.spend ? totalCostOf(state.spend) : null;
  const shownCost = attributes.get(SEARCH_ATTRIBUTES.cost);
  const costDue =
    cost !== null &&
    cost !== shownCost &&
    (shownCost === undefined || updates.length > 0 || Math.abs(cost - shownCost) >= SEARCH_COST_STEP * shownCost);
  if (costDue && patched(COST_ATTRIBUTE_PATCH)) updates.push({ key: SEARCH_ATTRIBUTES.cost, value: cost });
  if (updates.length > 0) upsertSearchAttributes(updates);
  if (patched(TURNS_MEMO_PATCH)) upsertMemo({ [TURNS_MEMO]: state.turns });
  setCurrentDetails(currentDetails(state, progress));
}

/**
 * Runs recorded before `longrun list` showed the figures `longrun state` shows upserted AgentContextTokens after a
 * turn only when it had moved by 2% of the window ({@link SEARCH_TOKENS_STEP}), and neither it nor the turns' memo
 * at a step (`list` showed `?` for both through an agent's first turn, a tool call waiting for approval included):
 * where such a history replays, this patch is absent and they keep doing so. Release 0.1.0
 * (docs/changing-workflows.md).
 */
const EXACT_LIST_FIGURES_PATCH = 'exact-list-figures';

/**
 * Runs recorded before the agent's cost was a search attribute upserted only the context's tokens after a turn (and
 * only when they had moved): where such a history replays, this patch is absent and `AgentCost` is not upserted.
 * Release 0.1.0 (docs/changing-workflows.md).
 */
const COST_ATTRIBUTE_PATCH = 'agent-cost-attribute';

/**
 * Runs recorded before `longrun list` showed turns upserted no memo after a turn: where such a history replays, this
 * patch is absent and none is upserted. Release 0.1.0 (docs/changing-workflows.md).
 */
const TURNS_MEMO_PATCH = 'turns-in-memo';

/**
 * Runs recorded before AgentCompactions counted compactions only upserted the last event's seq, reverts included:
 * where such a history replays, this patch is absent and the attribute keeps counting that way. Release 0.1.0
 * (docs/changing-workflows.md).
 */
const COMPACTION_COUNT_PATCH = 'compactions-without-reverts';

/**
 * Runs recorded before "compaction" became the one noun upserted the count as AgentCompressions: where such a history
 * replays, this patch is absent and the count keeps its former name. Release 0.1.0 (docs/changing-workflows.md).
 */
const COMPACTION_NOUN_PATCH = 'compaction-noun';

/**
 * Runs recorded before compactions showed `AgentStatus = compacting` upserted nothing when a compaction began or
 * ended without committing: where such a history replays, this patch is absent and the status stays `running`.
 * Release 0.1.0 (docs/changing-workflows.md).
 */
const COMPACTING_STATUS_PATCH = 'show-compacting';

/**
 * The `AgentStatus` the compaction in progress asks for, when it differs from the one shown: `compacting` while one
 * runs, `awaiting-review` while the draft of an automatic compaction waits, `running` after. One upsert when a compaction begins and one when it ends (the end rides on the count's
 * upsert when it commits); the steps in between are in the current details and the progress query only, since each
 * upsert is a command in the history and a visibility write.
 */
function statusFor(state: WorkflowState, progress: Progress): SearchAttributeUpdatePair[] {
  // A draft of an automatic compaction waiting (policy `review.automatic`) is `awaiting-review`: only agents with
  // that option, all started on code with the patch below, ever want it, so no history recorded before changes.
  const wanted = shownStatusOf(state, progress.compaction !== undefined, progress.awaitingApproval.length > 0);
  if (wanted === progress.statusShown || !patched(COMPACTING_STATUS_PATCH)) return [];
  progress.statusShown = wanted;
  return [{ key: SEARCH_ATTRIBUTES.status, value: wanted }];
}

/**
 * What the agent is doing changed (a turn's step, a tool call waiting for approval, a compaction's step): the details,
 * the status, and the context's tokens and the turns when they changed since shown (a step's tool results; an agent's
 * first turn): in one upsert, at most one a step, and the memo once a turn at most.
 */
export function showProgress(state: WorkflowState, progress: Progress): void {
  const exact = patched(EXACT_LIST_FIGURES_PATCH);
  const shown = workflowInfo().typedSearchAttributes.get(SEARCH_ATTRIBUTES.contextTokens);
  const updates = [
    ...statusFor(state, progress),
    ...(exact && shown !== state.contextTokens
      ? [{ key: SEARCH_ATTRIBUTES.contextTokens, value: state.contextTokens }]
      : []),
  ];
  if (updates.length > 0) upsertSearchAttributes(updates);
  if (exact && workflowInfo().memo?.[TURNS_MEMO] !== state.turns) upsertMemo({ [TURNS_MEMO]: state.turns });
  setCurrentDetails(currentDetails(state, progress));
}

/** After a compaction: its count, when, the context's tokens, what it did, and the status back to running. */
export function showCompaction(state: WorkflowState, event: CompactionEventSummary, progress: Progress): void {
  const count = patched(COMPACTION_NOUN_PATCH)
    ? SEARCH_ATTRIBUTES.compactions
    : SEARCH_ATTRIBUTES.compactionsFormerName;
  // As the stats and `longrun events` count them: compactions, not reverts (events of their own).
  const compactions = patched(COMPACTION_COUNT_PATCH) ? (state.stats?.count ?? 0) : event.seq;
  upsertSearchAttributes([
    { key: count, value: compactions },
    { key: SEARCH_ATTRIBUTES.lastCompactedAt, value: new Date(Date.now()) },
    { key: SEARCH_ATTRIBUTES.contextTokens, value: state.contextTokens },
    ...statusFor(state, progress),
  ]);
  setCurrentDetails(currentDetails(state, progress)); // the whole block, the event in it
}

/** The agent's current details, as the last turn or compaction left them. */
export function showDetails(state: WorkflowState, progress?: Progress): void {
  setCurrentDetails(currentDetails(state, progress));
}

/** The agent closed: its status and its last context size. */
export function showClosed(state: WorkflowState): void {
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.status, value: 'closed' },
    { key: SEARCH_ATTRIBUTES.contextTokens, value: state.contextTokens },
  ]);
}

/** The last compaction's summary call, where the details show it: its cost, how it was asked, its cached share. */
function summaryCallLine(event: CompactionEventSummary): string[] {
  const note = summaryCallNote(event.llm);
  if (!note) return [];
  return [`last summary call: ${formatUsd(event.spent?.summary ?? event.llm?.cost ?? null)} (${note})`];
}

/** The longest line of the current details: the UI's panel shows that much without clipping. */
export const DETAILS_LINE_CHARS = 80;

/**
 * The details' last paragraph: a no-break space, blank on the page. The Temporal UI (2.42, the dev server's) sizes the
 * details' frame to the rendered text less its top margin, about 15 px short, which clipped the last line of text.
 */
export const DETAILS_END = '\u00a0';

/**
 * What the Temporal UI shows as the agent's current details (no message content): one short paragraph per line, each
 * at most {@link DETAILS_LINE_CHARS} characters (a longer one is broken at spaces).
 */
export function currentDetails(state: WorkflowState, progress?: Progress): string {
  const window = state.modelInfo?.window ?? 0;
  const percent = window > 0 ? ` (${Math.round((100 * state.contextTokens) / window)}%)` : '';
  const last = state.events?.at(-1);
  const now = [
    ...(progress?.turn ? [`turn ${progress.turn.turn} in progress: model call ${progress.turn.step}`] : []),
    ...(progress?.compaction ? [describeCompaction(progress.compaction)] : []),
    ...(progress?.awaitingApproval ?? []).map((call) => `tool ${call.tool} awaits approval`),
  ];
  const paused = state.cooldown?.pausedUntil;
  const stats = state.stats;
  const reverts = stats?.reverts ?? 0;
  const lastLine = last
    ? [
        `last ${last.trigger === 'revert' ? 'event (a revert)' : 'compaction'}: ${last.seq}, ` +
          `${last.tokensBefore} → ${last.tokensAfter} tokens`,
        ...(last.strategies.length > 0 ? [`last strategies: ${last.strategies.join(', ')}`] : []),
        ...summaryCallLine(last),
      ]
    : [];
  const lines = [
    `**${shownStatusOf(state, progress?.compaction !== undefined, (progress?.awaitingApproval.length ?? 0) > 0)}** · model ${state.model} · ` +
      `preset ${state.policy?.preset ?? 'default'}`,
    ...(now.length > 0 ? [`now: ${now.join(' · ')}`] : []),
    `context: ${state.contextTokens} of ${window} tokens${percent}`,
    `turns: ${state.turns} · messages in context: ${state.messages.length}`,
    `compactions: ${stats?.count ?? 0}` + (reverts > 0 ? ` · reverts: ${reverts}` : ''),
    ...(state.spend ? [costLine(state.spend)] : []),
    ...(state.pins?.length
      ? [
          `pins: ${state.pins.map((pin) => pin.id).join(', ')} · ${pinnedTokensOf(state.pins)} of ` +
            `${pinBudgetOf(state.policy, window)} tokens of the pin budget`,
        ]
      : []),
    ...lastLine,
    ...(progress?.awaitingApproval ?? []).flatMap((call) => approvalLines(call, state.agentId)),
    ...(state.draft?.info.waits
      ? waitingDraft(state, state.draft.info)
      : state.draft
        ? [
            `**${state.draft.info.id} awaits review** (approve or discard):`,
            `${state.draft.info.tokensBefore} → ${state.draft.info.tokensAfter} tokens ` +
              `(${state.draft.info.steps.map((s) => s.strategy).join(', ')})`,
          ]
        : []),
    ...(paused !== undefined && state.contextTokens < paused
      ? state.cooldown?.pausedFor
        ? [`automatic compaction paused until ${paused} tokens:`, state.cooldown.pausedFor]
        : [`loop guard: automatic compaction paused until ${paused} tokens`]
      : []),
  ];
  return [...lines.flatMap((line) => brokenAt(line, DETAILS_LINE_CHARS)), DETAILS_END].join('\n\n');
}

/**
 * The draft of an automatic compaction waiting for review (policy `review.automatic`): what it does, its summary's
 * start, when it times out and what then, and the commands that decide it.
 */
function waitingDraft(state: WorkflowState, info: NonNullable<WorkflowState['draft']>['info']): string[] {
  const waits = info.waits!;
  const left = Math.max(0, Math.round((Date.parse(waits.until) - Date.now()) / 1000)); // workflow time
  const then = waits.onTimeout === 'apply' ? 'applied as made' : 'discarded';
  const agent = state.agentId;
  return [
    `**awaiting review: ${info.id}** (automatic compaction ${info.seq})`,
    `${info.tokensBefore} → ${info.tokensAfter} tokens (${info.steps.map((s) => s.strategy).join(', ')})`,
    ...(info.summaryPreview !== undefined ? [`summary: ${JSON.stringify(info.summaryPreview)}`] : []),
    `times out at ${waits.until.replace(/\.\d+Z$/, 'Z')} (in ${left} s), then ${then}`,
    `approve: \`longrun approve ${agent} ${info.id}\``,
    '(or with `--summary-file FILE`: an edited summary)',
    `discard: \`longrun discard ${agent} ${info.id}\``,
  ];
}

/**
 * A tool call waiting for approval (`progress.awaitingApproval`): when it times out and how, and the two commands
 * that answer it, each a line of its own, to copy whole.
 */
function approvalLines(call: ApprovalProgress, agentId: string): string[] {
  const then = call.onTimeout === 'approve' ? 'approved' : 'denied';
  return [
    `**awaiting approval: tool ${call.tool}** (${call.callId})`,
    `${then} at ${call.until.replace(/\.\d+Z$/, 'Z')} if nobody answers`,
    `approve: \`longrun approve-tool ${agentId} ${call.callId}\``,
    `deny: \`longrun deny-tool ${agentId} ${call.callId} [reason]\``,
  ];
}

/**
 * `line` in lines of at most `max` characters, broken at spaces (a word longer than that stays whole), never inside
 * a code span: a command in backticks stays on one line, to be copied whole.
 */
export function brokenAt(line: string, max: number): string[] {
  const breaks: number[] = []; // the spaces outside code spans
  let inCode = false;
  for (let i = 0; i < line.length; i++) {
    if (line[i] === '`') inCode = !inCode;
    else if (line[i] === ' ' && !inCode) breaks.push(i);
  }
  const lines: string[] = [];
  let start = 0;
  while (line.length - start > max) {
    const fits = breaks.filter((at) => at > start && at <= start + max);
    const at = fits.at(-1) ?? breaks.find((at) => at > start);
    if (at === undefined) break;
    lines.push(line.slice(start, at));
    start = at + 1;
  }
  return [...lines, line.slice(start)];
}
