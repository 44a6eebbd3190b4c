/**
 * What a `longrun replay` (commands/replay.ts) measured once its agent has closed: each request's tokens and those
 * without compaction, the cost with prompt caching (replay-cost.ts), each compaction's stored event, summary and
 * removed messages (checked to reload byte-identical), and the history of every run of the agent's workflow. Makes
 * the report (replay-report.ts) but for the agent's deletion.
 */
import type { Client } from '@temporalio/client';
import { storedCompactionEvents } from '../client/reads.ts';
import { agentCostOf } from '../contract/state.ts';
import type { AgentState } from '../contract/state.ts';
import { compactionKey } from '../contract/keys.ts';
import type { PolicyOverrides } from '../engine/policy.ts';
import type { ChatMessage } from '../engine/messages.ts';
import { textOf } from '../engine/messages.ts';
import { CHAT_OVERHEAD, countMessage, countToolSchemas, loadTokenCounter } from '../engine/tokens.ts';
import { pairViewOf, toolPairViolations } from '../engine/tool-pairs.ts';
import type { RecordedAnswer } from '../llm/replayed-model.ts';
import type { S3BlobStore } from '../storage/s3.ts';
import { replayCost, sharedPrefixLengths, tokensWithoutCompaction } from './replay-cost.ts';
import type { CutShort, ReplayReport } from './replay-report.ts';

/** The report of a replay's closed agent (`state`), from what the run kept (`run`); its deletion comes after. */
export async function measureReplay(
  client: Client,
  store: S3BlobStore,
  agentId: string,
  state: AgentState,
  run: {
    options: { file: string; policy?: PolicyOverrides };
    window: number;
    preset: string;
    stepBudget: number;
    cutShort: CutShort[];
    recordedSteps: number;
    replayedSteps: number;
    answeredWith: (RecordedAnswer | null)[];
    requests: ChatMessage[][];
    session: ChatMessage[];
    schemas: unknown[];
  },
): Promise<Omit<ReplayReport, 'deletion'>> {
  const counter = await loadTokenCounter(state.modelInfo!.encoding);
  // Each distinct message counted once: requests and the prefixes below sum the same messages request after request.
  const counts = new Map<string, number>();
  const counted = (message: ChatMessage) => {
    const key = JSON.stringify(message);
    let tokens = counts.get(key);
    if (tokens === undefined) counts.set(key, (tokens = countMessage(counter, message, state.modelInfo!.margin)));
    return tokens;
  };
  const schemaTokens = countToolSchemas(counter, run.schemas, state.modelInfo!.margin);
  // A request's tokens are its messages' plus the reply primer and the schemas (engine/tokens.ts countRequest).
  const fixedTokens = CHAT_OVERHEAD.replyPrimer + schemaTokens;
  const requestTokens = run.requests.map((request) => request.reduce((sum, m) => sum + counted(m), fixedTokens));
  const withoutCompaction = tokensWithoutCompaction(run.requests, run.session, counted, fixedTokens);
  // Cost with caching (commands/replay-cost.ts): each request's prefix shared with an earlier one, its reply.
  const shared = sharedPrefixLengths(run.requests);
  const prefixTokens = run.requests.map((request, i) =>
    shared[i]! === 0 ? 0 : schemaTokens + request.slice(0, shared[i]).reduce((sum, m) => sum + counted(m), 0),
  );
  const replyTokens = run.answeredWith.map((answer) => (answer ? counted(run.session[answer.message - 1]!) : 0));
  const costs = replayCost(
    { requestTokens, prefixTokens, fullTokens: withoutCompaction, replyTokens },
    state.modelInfo?.price,
    state.spend?.summaryCost ?? 0,
  );
  const events = await storedCompactionEvents(
    store,
    state,
    Array.from({ length: state.compactions ?? 0 }, (_, i) => i + 1),
  );
  const compactions = await Promise.all(
    events.map(async (event) => {
      const lines = ((await store.get(event.keys.removed)) ?? '').split('\n').filter(Boolean);
      const offloaded = await Promise.all(
        lines.map(async (line) => {
          const item = JSON.parse(line) as { key: string; message: ChatMessage };
          return { key: item.key, reloadIdentical: (await store.get(item.key)) === JSON.stringify(item.message) };
        }),
      );
      const summaryBody = event.summaryTokens
        ? await store.get(compactionKey(state, event.seq, 'summary.json'))
        : undefined;
      return {
        seq: event.seq,
        trigger: event.trigger,
        strategies: event.strategies as string[],
        tokensBefore: event.tokensBefore,
        tokensAfter: event.tokensAfter,
        keys: event.keys,
        removedCount: event.removedCount,
        summary: summaryBody ? textOf((JSON.parse(summaryBody) as ChatMessage).content) : null,
        facts: event.facts
          ? { found: event.facts.found, missing: event.facts.missing, pinned: event.facts.pinned }
          : null,
        offloaded,
      };
    }),
  );
  // History of every run of the workflow, summed.
  let historyBytes = 0;
  let runs = 0;
  for await (const execution of client.workflow.list({ query: `WorkflowId = "agent-${agentId}"` })) {
    const description = await client.workflow.getHandle(execution.workflowId, execution.runId).describe();
    historyBytes += description.historySize ?? 0;
    runs++;
  }
  return {
    file: run.options.file,
    agentId,
    storagePrefix: state.storagePrefix ?? '',
    preset: run.preset,
    ...(run.options.policy !== undefined ? { policy: run.options.policy } : {}),
    window: run.window,
    messages: run.session.length,
    turns: state.turns,
    modelCalls: run.requests.length,
    recordedSteps: run.recordedSteps,
    replayedSteps: run.replayedSteps,
    answeredWith: run.answeredWith,
    stepBudget: run.stepBudget,
    cutShort: run.cutShort,
    compactions,
    toolPairViolations: run.requests.reduce((n, r) => n + toolPairViolations(r.map(pairViewOf)).length, 0),
    maxRequestTokens: Math.max(0, ...requestTokens),
    requestTokens,
    cachedTokens: costs.cachedTokens,
    replyTokens: costs.replyTokens,
    tokensSent: requestTokens.reduce((a, b) => a + b, 0),
    requestTokensWithoutCompaction: withoutCompaction,
    tokensSentWithoutCompaction: withoutCompaction.reduce((a, b) => a + b, 0),
    price: costs.price,
    cost: costs.cost,
    costWithoutCompaction: costs.costWithoutCompaction,
    costFloor: costs.costFloor,
    cachedInputShare: costs.cachedInputShare,
    cachedInputShareWithoutCompaction: costs.cachedInputShareWithoutCompaction,
    agentCost: state.cost ?? (state.spend ? agentCostOf(state.spend) : null),
    historyBytes,
    plans: { made: state.plans?.made ?? 0, empty: state.plans?.empty ?? 0, avoided: state.plans?.avoided ?? 0 },
    continueAsNew: Math.max(0, runs - 1),
    finalView: run.requests.at(-1) ?? [],
  };
}
