/**
 * What `longrun replay` (commands/replay.ts) reports, and the report as a few readable lines: the recorded steps
 * replayed and which answered each request, the turns cut short, each compaction, the tokens sent and the cost with
 * and without compaction. `--json` prints the report as it is.
 */
import { formatShare, formatUsd } from '../contract/state.ts';
import type { AgentCost } from '../contract/state.ts';
import type { ResolvedPrice } from '../engine/pricing.ts';
import type { PolicyOverrides } from '../engine/policy.ts';
import type { ChatMessage } from '../engine/messages.ts';
import type { RecordedAnswer } from '../llm/replayed-model.ts';
import { renderDeletion } from './replay-cleanup.ts';
import type { AgentDeletion } from './replay-cleanup.ts';

/** What became of the pin a replay made (`ReplayOptions.pin`, commands/replay.ts). */
export interface ReplayPins {
  /** The pinned message's id. */
  messageId: string;
  /** Requests after the pin, and those that held its text verbatim. */
  requests: number;
  verbatim: number;
  /** Compactions after the pin. */
  compactions: number;
}

/** A recorded turn whose assistant messages were not all replayed, and why. */
export interface CutShort {
  /** 1-based. */
  turn: number;
  recorded: number;
  replayed: number;
  reason: string;
}

export interface ReplayReport {
  file: string;
  /** The agent the replay ran (its workflow is agent-<agentId>). */
  agentId: string;
  /** Where the agent's objects are stored (messages, compactions): agents/<agentId>/<life>/. */
  storagePrefix: string;
  preset: string;
  /** The policy overrides it ran under on top of the preset (`--policy FILE`), when given. */
  policy?: PolicyOverrides;
  window: number;
  messages: number;
  turns: number;
  /** Requests the model server received. */
  modelCalls: number;
  /** Assistant messages in the recording. */
  recordedSteps: number;
  /** Model calls answered with a recorded assistant message (each recorded message counted once). */
  replayedSteps: number;
  /**
   * Per request, in the order the model server received them (as `requestTokens`): the recorded step that answered
   * it (turn and step 1-based, `message` its 1-based place in the recording, how it was placed), null for a request
   * the recording had no reply for. A step answering more than one request (a retried call) is counted once above.
   */
  answeredWith: (RecordedAnswer | null)[];
  /** The step budget the agent ran under: the longest recorded turn, plus a margin. */
  stepBudget: number;
  /** Turns not replayed in full (replayedSteps < recordedSteps), each with its reason. */
  cutShort: CutShort[];
  compactions: {
    seq: number;
    trigger: string;
    strategies: string[];
    tokensBefore: number;
    tokensAfter: number;
    /** Storage keys of the event, the removed segment (JSONL) and the context manifest it left. */
    keys: { event: string; removed: string; context: string };
    /** Messages that left the context. */
    removedCount: number;
    summary: string | null;
    facts: { found: number; missing: number; pinned: string[] } | null;
    offloaded: { key: string; reloadIdentical: boolean }[];
  }[];
  toolPairViolations: number;
  maxRequestTokens: number;
  /** Each request's tokens, in the order the model server received them. */
  requestTokens: number[];
  /**
   * Of each request's tokens, those a provider's prompt cache would serve (beside `requestTokens`): its longest
   * prefix of whole messages an earlier request began with, from 1,024 tokens in steps of 128 (commands/replay-cost.ts).
   */
  cachedTokens: number[];
  /** Each request's reply: the recorded answer's tokens (0 for a request the recording had no reply for). */
  replyTokens: number[];
  /** The price the costs are at (USD per million tokens; the agent's), null when none is known. */
  price: ResolvedPrice | null;
  /** USD of the requests as sent, with caching, plus the compactions' summary calls; null without a price. */
  cost: number | null;
  /** USD of sending everything with caching: each request the whole transcript, the previous one its cached prefix. */
  costWithoutCompaction: number | null;
  /**
   * The least any compaction that sends each recorded message whole could cost (commands/replay-cost.ts
   * `costFloorOf`): the replies, each message once uncached, the first request cached in every later one.
   */
  costFloor: number | null;
  /** Cached input tokens over input tokens (0 to 1), as sent, and when sending everything. */
  cachedInputShare: number | null;
  cachedInputShareWithoutCompaction: number | null;
  /**
   * The agent's own account (its state's `cost`): the usage the replay's model server reported (it caches prompts as
   * OpenAI does, counting tokens its own way: llm/prompt-cache.ts), at the same price.
   */
  agentCost: AgentCost | null;
  /** What each request would have carried without compaction: the whole recording up to its last message. */
  requestTokensWithoutCompaction: number[];
  tokensSent: number;
  tokensSentWithoutCompaction: number;
  historyBytes: number;
  /**
   * Compaction plans the agent made, those that found nothing to do, and masking passes it did not plan because it
   * could tell they would find nothing (the agent's `plans`; zeros for an agent of before they were counted).
   */
  plans: { made: number; empty: number; avoided: number };
  continueAsNew: number;
  finalView: ChatMessage[];
  /**
   * On a server the replay did not start: its agent's deletion from the namespace, reported gone only once the
   * namespace's list shows none of its runs. Null on the embedded server (it is removed with the server).
   */
  deletion: AgentDeletion | null;
  /** The pin's figures, when the replay pinned (`ReplayOptions.pin`, commands/replay.ts). */
  pins?: ReplayPins;
}

/**
 * How the requests were answered: with a recorded step (how many distinct, how many again: a retried call or a
 * request placed where an earlier one was) or with none.
 */
export function answersLine(r: Pick<ReplayReport, 'answeredWith' | 'modelCalls'>): string {
  const answered = r.answeredWith.filter((a) => a !== null);
  const distinct = new Set(answered.map((a) => a.message)).size;
  return (
    `requests answered with a recorded step: ${answered.length} of ${r.modelCalls} ` +
    `(${distinct} distinct, ${answered.length - distinct} again); ${r.modelCalls - answered.length} with none`
  );
}

/** The cost line of the report: with caching, against sending everything with caching, and the cached shares. */
export function costLineOf(
  r: Pick<
    ReplayReport,
    'price' | 'cost' | 'costWithoutCompaction' | 'costFloor' | 'cachedInputShare' | 'cachedInputShareWithoutCompaction'
  >,
): string {
  if (!r.price || r.cost === null || r.costWithoutCompaction === null) {
    return `cost unknown (no price for the model: give one with --price); cached input ${formatShare(r.cachedInputShare)}`;
  }
  const p = r.price;
  const ratio = r.costWithoutCompaction > 0 ? ` (${(r.cost / r.costWithoutCompaction).toFixed(2)}×)` : '';
  const floor =
    r.costFloor === null || r.costFloor === undefined
      ? ''
      : `, floor ${formatUsd(r.costFloor)}` +
        (r.costWithoutCompaction > 0 ? ` (${(r.costFloor / r.costWithoutCompaction).toFixed(2)}×)` : '');
  return (
    `cost ${formatUsd(r.cost)} vs ${formatUsd(r.costWithoutCompaction)} sending everything with caching${ratio}${floor}; ` +
    `cached input ${formatShare(r.cachedInputShare)} vs ${formatShare(r.cachedInputShareWithoutCompaction)} ` +
    `(USD per 1M tokens: input ${p.inputPerMillion}, cached ${p.cachedInputPerMillion}, output ${p.outputPerMillion})`
  );
}

/** The overrides a replay ran under, as the report's first line names them: ` with maxTokens 8000, …`. */
function policyNote(policy: PolicyOverrides | undefined): string {
  const entries = Object.entries(policy ?? {});
  if (entries.length === 0) return '';
  return ` with ${entries.map(([field, value]) => `${field} ${JSON.stringify(value)}`).join(', ')}`;
}

/** The report as a few readable lines. */
export function renderReplay(r: ReplayReport): string {
  const lines = [
    `${r.file}: ${r.messages} messages, ${r.turns} turns, ${r.modelCalls} model calls (preset ${r.preset}${policyNote(r.policy)}, window ${r.window})`,
    r.replayedSteps < r.recordedSteps
      ? `CUT SHORT: replayed ${r.replayedSteps} of ${r.recordedSteps} recorded steps (assistant messages); ` +
        `step budget ${r.stepBudget}`
      : `replayed all ${r.recordedSteps} recorded steps (assistant messages)`,
    ...r.cutShort.map(
      (c) =>
        `  ${c.turn === 0 ? 'before turn 1' : `turn ${c.turn}`}: ${c.replayed} of ${c.recorded} steps replayed: ${c.reason}`,
    ),
    answersLine(r),
    `largest request ${r.maxRequestTokens} tokens of ${r.window}; tokens sent ${r.tokensSent} vs ${r.tokensSentWithoutCompaction} without compaction`,
    costLineOf(r),
    `tool-pair violations: ${r.toolPairViolations}; history ${r.historyBytes} bytes over ${r.continueAsNew + 1} run(s)`,
    `compaction plans: ${r.plans.made} made, ${r.plans.empty} found nothing; ${r.plans.avoided} masking passes not planned (they would have found nothing)`,
  ];
  for (const c of r.compactions) {
    const reloads = c.offloaded.filter((o) => o.reloadIdentical).length;
    lines.push(
      `compaction ${c.seq} (${c.trigger}): ${c.tokensBefore} → ${c.tokensAfter} tokens; ${c.strategies.join(', ')}; ` +
        `${c.offloaded.length} removed, ${reloads} reload byte-identical` +
        (c.facts ? `; facts found ${c.facts.found}, missing ${c.facts.missing}, pinned ${c.facts.pinned.length}` : ''),
    );
  }
  if (r.compactions.length === 0) lines.push('no compaction (the session fits the window under this preset)');
  if (r.deletion) lines.push(renderDeletion(r.deletion));
  return lines.join('\n');
}
