/**
 * Compaction as activities: **plan** (the engine's split over message metadata; the plan is stored, the workflow
 * gets a summary of it), **summarize** (the LLM, from stored bodies, heartbeating), and **apply** (store what
 * replaces each message, write the removed segment as JSONL and the new context manifest, record the event). Each
 * writes under keys derived from the agent and the compaction's sequence number, so a retry overwrites, never
 * duplicates.
 */
import { ApplicationFailure } from '@temporalio/common';
import type OpenAI from 'openai';
import { compactionCoverage } from '../engine/coverage.ts';
import { FAILURE } from '../contract/failures.ts';
import { applyPlan, replacementBody, summaryMessage, truncateToTokens } from '../engine/apply.ts';
import type { ChatMessage } from '../engine/messages.ts';
import { originalKeyOf, partLabel, textOf } from '../engine/messages.ts';
import { clipLine, headOf } from '../engine/text.ts';
import { planCompaction, REPLACED_KIND } from '../engine/planner.ts';
import type { Plan, SummarySpec } from '../engine/planner.ts';
import type { CompactionPolicy } from '../engine/policy.ts';
import { estimateCost } from '../engine/cost.ts';
import {
  cooldownAfter,
  gateAfterMaskSkip,
  gateAfterSkip,
  gateOf,
  holdGrowth,
  judgeCompaction,
  loopGuardNote,
} from '../engine/trigger.ts';
import type { CooldownState, JudgedCompaction } from '../engine/trigger.ts';
import {
  DEFAULT_SUMMARY_SYSTEM_PROMPT,
  loopPositionBlock,
  parseSummary,
  removedLine,
  renderSummary,
  SUMMARY_JSON_SCHEMA,
  summaryPrompt,
  summaryTitle,
} from '../engine/summary.ts';
import { extractiveSummary } from '../engine/extractive.ts';
import { resolveModelInfo } from '../engine/models.ts';
import { nextActionOf, parseLedgerUpdate, renderLedger, updateLedger } from '../engine/ledger.ts';
import type { LedgerUpdate, TaskLedger } from '../engine/ledger.ts';
import { checkFacts, extractFacts, preservedFactsBlock, prioritizeFacts } from '../engine/facts.ts';
import type { Fact } from '../engine/facts.ts';
import { countMessage, loadTokenCounter } from '../engine/tokens.ts';
import type { BlobStore } from '../storage/s3.ts';
import { compactionKey, messageKey, replacedKey } from '../contract/keys.ts';
import { agentLife, keyedRecord, summaryOfEvent, unkeyedRecord } from '../contract/agent.ts';
import type { CompactionEvent, MessageRecord } from '../contract/agent.ts';
import type {
  ApplyCompactionInput,
  ApplyOutcome,
  PlanCompactionInput,
  PlanOutcome,
  SummarizeInput,
  SummarizeProgress,
  SummaryOutcome,
} from '../contract/activities.ts';
import { modelFailure } from './model-errors.ts';
import { heartbeatNow, storedObjects, withHeartbeat } from './stored.ts';
import { observeModelCall, recordCompaction } from './telemetry.ts';

export interface CompactionDeps {
  store: BlobStore;
  openai: OpenAI;
  /** The model that writes summaries; without one, the extractive summarizer quotes the span instead. */
  summaryModel?: string;
  /** The summary model's window (default: the registry's, or 128,000 for a model it does not know). */
  summaryWindow?: number;
  /** A break of the coverage invariant fails the compaction for good (tests) instead of being recorded. */
  strictInvariants?: boolean;
}

interface StoredPlan {
  plan: Plan;
  context: MessageRecord[];
  policy: CompactionPolicy;
  trigger: Plan['trigger'];
  /** The cooldown the plan was made under (absent in plans stored before masking passes). */
  cooldown?: CooldownState;
}

/** The `llm.model` of an event whose summary was extractive. */
export const EXTRACTIVE_MODEL = 'extractive (no summary model)';

/** Facts named in the re-prompt and pinned, at most (the most valuable kinds first). */
const MAX_PINNED_FACTS = 40;

/** The summary reply read (JSON, headings or text) and rendered into the context message. */
function readSummary(reply: string): { rendered: string; parsedAs: string; update: LedgerUpdate } {
  const { summary, parsedAs } = parseSummary(reply);
  return {
    rendered: renderSummary(summary),
    parsedAs,
    update: { ...parseLedgerUpdate(reply), nextAction: nextActionOf(summary.next_steps) },
  };
}

/** The one re-prompt: the facts the summary lost, to be kept verbatim. */
function missingFactsPrompt(missing: readonly Fact[]): string {
  return [
    'Your summary lost these facts from the removed messages. Rewrite the whole summary, same sections, keeping',
    'each of them verbatim:',
    ...missing.map((f) => `- ${f.text}`),
  ].join('\n');
}

/**
 * The transcript the summarizer reads: one block per message, tool calls and results named; a message of parts as
 * its text, an image as `[image]`; a message over `maxChars` cut (never inside a surrogate pair).
 */
export function transcriptOf(messages: readonly ChatMessage[], maxChars = Infinity): string {
  return messages
    .map((m) => {
      const calls = (m.tool_calls ?? []).map((c) => `\n→ calls ${c.function.name}(${c.function.arguments}) [${c.id}]`);
      const who = m.role === 'tool' ? `tool result [${m.tool_call_id}]` : m.role;
      const content = textOf(m.content, partLabel);
      const text = content.length > maxChars ? `${headOf(content, maxChars)}… [cut for the summarizer]` : content;
      return `### ${who}\n${text}${calls.join('')}`;
    })
    .join('\n\n');
}

/** Consecutive chunks of `messages`, each within `budget` tokens (a single larger message is a chunk of its own). */
export function chunkByTokens<T>(messages: readonly T[], tokensOf: (m: T) => number, budget: number): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let size = 0;
  for (const message of messages) {
    const tokens = tokensOf(message);
    if (current.length > 0 && size + tokens > budget) {
      chunks.push(current);
      current = [];
      size = 0;
    }
    current.push(message);
    size += tokens;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/** The last tool call of a span and a preview of its results: where a summarized loop stopped. */
function loopEnd(span: readonly ChatMessage[]): { lastAction?: string; lastResult?: string } {
  const at = span.findLastIndex((m) => m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0);
  if (at === -1) return {};
  const calls = span[at]!.tool_calls!;
  const results = span.slice(at + 1).filter((m) => m.role === 'tool');
  return {
    lastAction: calls.map((c) => `${c.function.name}(${clipLine(c.function.arguments, 160)})`).join('; '),
    ...(results.length
      ? { lastResult: clipLine(results.map((m) => textOf(m.content, partLabel)).join(' | '), 240) }
      : {}),
  };
}

/** Share of the summary model's window a chunk's prompt may take (the rest: instructions, ledger, the answer). */
const WINDOW_SHARE = 0.6;
const MIN_CHUNK_TOKENS = 1_000;

/** The summary model's window from the registry; 128,000 for a model it does not know. */
function registryWindow(model: string | undefined): number {
  try {
    return model ? resolveModelInfo(model).window : 128_000;
  } catch {
    return 128_000;
  }
}

export function createCompactionActivities(deps: CompactionDeps) {
  const { store, openai, summaryModel, summaryWindow: window } = deps;
  const summaryWindow = window ?? registryWindow(summaryModel);
  const { load, save } = storedObjects(store);
  const seqId = (prefix: string, seq: number) => `${prefix}${String(seq).padStart(6, '0')}`;

  /** Stores the summary message (or the user message it was prepended to) and counts it. */
  async function storeSummary(input: SummarizeInput, rendered: string): Promise<MessageRecord> {
    const host = input.prependToKey ? await load<ChatMessage>(input.prependToKey) : undefined;
    const record = await save(
      compactionKey(input, input.seq, 'summary.json'),
      summaryMessage(rendered, host),
      input.counting,
      { id: seqId('c', input.seq), kind: 'summary' },
    );
    const turn = input.coverage?.currentTurn;
    return turn ? { ...record, covers: { turnId: turn.turnId, steps: turn.steps } } : record;
  }

  /** Stores the task ledger's message and counts it. */
  function storeLedger(input: SummarizeInput, ledger: TaskLedger): Promise<MessageRecord> {
    return save(
      compactionKey(input, input.seq, 'ledger.json'),
      { role: 'user', content: renderLedger(ledger) },
      input.counting,
      { id: seqId('l', input.seq), kind: 'ledger' },
    );
  }

  const steps = {
    /** The engine's plan over the context's metadata; stored for the apply step, summarized for the workflow. */
    async planCompaction(input: PlanCompactionInput): Promise<PlanOutcome> {
      const { agentId, life, seq, summarizerFailed, ...rest } = input;
      // A plan scheduled before the rename names the pace by its former name.
      rest.callsSinceCompaction ??= (input as { callsSinceCompression?: number }).callsSinceCompression;
      const agent = agentLife({ agentId, life });
      const context = input.context.map((record) => keyedRecord(agent, record));
      // Without a summary model the extractive summarizer stands in (or the policy's fallback, as the policy says).
      const summarizer = summarizerFailed ? 'failed' : summaryModel ? 'available' : 'none';
      const plan = planCompaction({ ...rest, context, summarizer });
      const outcome: PlanOutcome = {
        action: plan.action,
        reason: plan.reason,
        ...(plan.maskPass ? { maskPass: true as const } : {}),
        steps: plan.steps.map(({ strategy, tokensSaved, note }) => ({
          strategy,
          tokensSaved,
          ...(note ? { note } : {}),
        })),
        tokensBefore: plan.before.tokens,
        tokensAfter: plan.after.tokens,
        targetTokens: plan.target.tokens,
      };
      if (plan.action === 'skip') {
        const growth = holdGrowth(input.policy);
        const gate = plan.maskPass
          ? gateAfterMaskSkip(input.policy, input.window, input.cooldown, plan.before.tokens, growth)
          : gateAfterSkip(input.policy, input.window, plan.before.tokens, growth, input.cooldown);
        return { ...outcome, gate };
      }
      const planKey = compactionKey(agent, seq, 'plan.json');
      const stored: StoredPlan = {
        plan,
        context,
        policy: input.policy,
        trigger: input.trigger,
        cooldown: input.cooldown,
      };
      await store.put(planKey, JSON.stringify(stored), 'application/json');
      const keyOf = new Map(context.map((m) => [m.id, m.key]));
      const kindById = new Map(context.map((m) => [m.id, m.kind]));
      const kept = new Set(plan.summary?.keptUserIds);
      const spec: SummarySpec | undefined = plan.summary;
      return {
        ...outcome,
        planKey,
        ...(spec
          ? {
              summary: {
                spanKeys: spec.spanIds.map((id) => keyOf.get(id)!),
                keptKeys: spec.keptUserIds.map((id) => keyOf.get(id)!),
                ...(spec.placement.mode === 'prepend' ? { prependToKey: keyOf.get(spec.placement.id)! } : {}),
                estimatedTokens: spec.estimatedTokens,
                maxTokens: spec.maxTokens,
                writer: spec.writer,
                coverage: spec.coverage,
                leavingIds: spec.spanIds.filter((id) => !kept.has(id) && kindById.get(id) !== 'summary'),
              },
            }
          : {}),
      };
    },

    /**
     * Summarizes the span with the summary model: structured output (JSON schema) first; a provider that rejects
     * it gets the plain prompt, whose reply is parsed by headings. Stores the summary message and counts it.
     */
    async summarizeSpan(input: SummarizeInput): Promise<SummaryOutcome> {
      const started = Date.now();
      const span = await Promise.all(input.spanKeys.map((key) => load<ChatMessage>(key)));
      const isPrevious = (i: number) => input.spanKeys[i]!.endsWith('/summary.json');
      const previous = span.filter((_, i) => isPrevious(i));
      const previousText = previous.map((m) => textOf(m.content)).join('\n\n');
      const rest = span.filter((_, i) => !isPrevious(i));
      // What leaves the context with this summary (the user's messages kept verbatim stay): its must-keep facts are
      // checked in the summary and the ledger, asked for once more, then pinned.
      const kept = new Set(input.keptKeys ?? []);
      const leaving = span.filter((_, i) => !isPrevious(i) && !kept.has(input.spanKeys[i]!));
      const facts = extractFacts([...previous, ...leaving]);
      // The ledger after this summary: the goal and the user's constraints verbatim, the rest from the summary.
      const goal = input.goalKey ? textOf((await load<ChatMessage>(input.goalKey)).content) : undefined;
      const userMessages = rest.filter((m) => m.role === 'user').map((m) => textOf(m.content));
      /** A summary's ledger and the facts it (with the ledger) keeps. */
      const judge = (rendered: string, update: LedgerUpdate) => {
        const ledger = updateLedger(input.ledger, {
          ...(goal !== undefined ? { goal } : {}),
          userMessages,
          update,
          facts,
        });
        return { rendered, ledger, check: checkFacts(facts, `${rendered}\n${renderLedger(ledger)}`) };
      };
      const host = input.prependToKey ? await load<ChatMessage>(input.prependToKey) : undefined;
      const counter = await loadTokenCounter(input.counting.encoding);
      /**
       * The summary message: its title (what it covers), the summary, where the loop stands (a summary reaching into
       * the turn in progress), the facts it lost pinned verbatim, and the list of what left the context. Within its
       * budget: the pinned facts least worth keeping go first, then the summary's text is cut, never the frame.
       */
      const compose = (judged: ReturnType<typeof judge>, missing: readonly Fact[]) => {
        const body = judged.rendered.replace(
          /^\[Summary of earlier conversation[^\n]*\]/,
          summaryTitle(input.coverage),
        );
        const steps = input.coverage?.currentTurn?.steps;
        const frame = [
          ...(steps ? [loopPositionBlock({ steps, ...loopEnd(rest), nextStep: judged.ledger.nextAction })] : []),
        ];
        const removed = input.leavingIds?.length ? removedLine(input.leavingIds, messageKey(input, '<id>')) : '';
        const textWith = (summaryText: string, pins: readonly Fact[]) =>
          [summaryText, ...frame, ...(pins.length ? [preservedFactsBlock(pins)] : []), ...(removed ? [removed] : [])]
            .filter(Boolean)
            .join('\n\n');
        const fits = (text: string) =>
          countMessage(counter, summaryMessage(text, host), input.counting.margin) <= input.maxTokens;
        let pins = prioritizeFacts(missing, MAX_PINNED_FACTS);
        while (pins.length > 0 && !fits(textWith(body, pins))) pins = pins.slice(0, -1);
        if (fits(textWith(body, pins))) return { text: textWith(body, pins), pinned: pins };
        // Still over: cut the summary's own text, by counting, to what the frame leaves.
        const frameTokens = countMessage(counter, summaryMessage(textWith('', pins), host), input.counting.margin);
        const cut = truncateToTokens(
          { role: 'user', content: '' },
          body,
          Math.max(64, input.maxTokens - frameTokens),
          1,
          '[… the rest of this summary was cut to fit its budget …]',
          '',
          { counter, margin: input.counting.margin },
        );
        return { text: textWith(cut, pins), pinned: pins };
      };
      /** Pins what is still missing, stores summary and ledger, and says what happened. */
      const outcome = async (
        judged: ReturnType<typeof judge>,
        how: Pick<SummaryOutcome, 'parsedAs' | 'responseFormat' | 'llm'> & { reprompted: boolean; chunks?: number },
      ): Promise<SummaryOutcome> => {
        const { text, pinned } = compose(judged, judged.check.missing);
        return {
          record: await storeSummary(input, text),
          ledger: judged.ledger,
          ledgerRecord: await storeLedger(input, judged.ledger),
          parsedAs: how.parsedAs,
          responseFormat: how.responseFormat,
          ...(how.chunks !== undefined ? { chunks: how.chunks } : {}),
          facts: {
            found: judged.check.found.length,
            missing: judged.check.missing.length,
            reprompted: how.reprompted,
            pinned: pinned.map((f) => f.text),
          },
          llm: how.llm,
        };
      };

      if (!summaryModel || input.writer === 'extractive') {
        // No summary model, or it failed: the extractive summarizer quotes the span instead (labelled as such).
        // Within the summary's budget (about 3 characters a token, less the frame), the facts that fit listed.
        const extracted = extractiveSummary(
          rest,
          previousText || undefined,
          Math.max(1_000, (input.maxTokens - 300) * 3),
        );
        return outcome(judge(renderSummary(extracted), { nextAction: nextActionOf(extracted.next_steps) }), {
          parsedAs: 'extractive',
          responseFormat: 'none',
          reprompted: false,
          llm: { model: EXTRACTIVE_MODEL, promptTokens: 0, completionTokens: 0, durationMs: Date.now() - started },
        });
      }

      // A span too large for the summary model's window is summarized in chunks, each folding in the one before.
      const budget = Math.max(MIN_CHUNK_TOKENS, Math.floor(summaryWindow * WINDOW_SHARE) - input.maxTokens);
      const maxChars = budget * 3; // one message alone is cut to fit a chunk
      const promptFor = (
        part: readonly ChatMessage[],
        before: string,
      ): OpenAI.Chat.Completions.ChatCompletionMessageParam[] => [
        { role: 'system', content: DEFAULT_SUMMARY_SYSTEM_PROMPT },
        {
          role: 'user',
          content: summaryPrompt({
            transcript: transcriptOf(part, maxChars),
            ...(before ? { previousSummary: before } : {}),
            ...(input.ledger ? { ledger: renderLedger(input.ledger) } : {}),
            ...(input.instructions ? { instructions: input.instructions } : {}),
            ...(input.coverage?.currentTurn ? { stepsInProgress: input.coverage.currentTurn.steps } : {}),
          }),
        },
      ];
      const chunks = chunkByTokens(rest, (m) => counter.count(transcriptOf([m], maxChars)), budget);
      const usage = { promptTokens: 0, completionTokens: 0 };
      let responseFormat: 'json_schema' | 'text' = 'json_schema';
      const ask = async (conversation: OpenAI.Chat.Completions.ChatCompletionMessageParam[]) => {
        const completion = await observeModelCall(
          'summary',
          summaryModel,
          () =>
            openai.chat.completions.create({
              model: summaryModel,
              messages: conversation,
              max_tokens: input.maxTokens,
              ...(responseFormat === 'json_schema'
                ? { response_format: { type: 'json_schema' as const, json_schema: SUMMARY_JSON_SCHEMA } }
                : {}),
            }),
          (completion) => ({ usage: completion.usage, model: completion.model }),
        );
        usage.promptTokens += completion.usage?.prompt_tokens ?? 0;
        usage.completionTokens += completion.usage?.completion_tokens ?? 0;
        return completion.choices[0]?.message.content ?? '';
      };
      const read = (reply: string) => {
        const { rendered, parsedAs, update } = readSummary(reply);
        return { ...judge(rendered, update), parsedAs };
      };
      // The chunk the model is on, in the heartbeats: what `longrun watch` shows as "chunk k of n".
      const progress: SummarizeProgress = { chunk: 0, chunks: Math.max(1, chunks.length) };
      const onChunk = (chunk: number) => {
        progress.chunk = chunk;
        heartbeatNow(progress);
      };
      const summarize = async () => {
        let before = previousText;
        for (const [i, chunk] of chunks.slice(0, -1).entries()) {
          onChunk(i + 1);
          before = readSummary(await ask(promptFor(chunk, before))).rendered;
        }
        onChunk(progress.chunks);
        const messages = promptFor(chunks.at(-1) ?? [], before);
        let reply: string;
        try {
          reply = await ask(messages);
        } catch (error) {
          // A provider without structured output answers 400: ask again in plain text (parsed by headings).
          if ((error as { status?: number }).status !== 400) throw error;
          responseFormat = 'text';
          reply = await ask(messages);
        }
        const first = read(reply);
        if (first.check.missing.length === 0) return { ...first, reprompted: false };
        try {
          const second = read(
            await ask([
              ...messages,
              { role: 'assistant', content: reply },
              { role: 'user', content: missingFactsPrompt(prioritizeFacts(first.check.missing, MAX_PINNED_FACTS)) },
            ]),
          );
          if (second.check.missing.length <= first.check.missing.length) return { ...second, reprompted: true };
        } catch {
          // The first summary stands; what it lost is pinned.
        }
        return { ...first, reprompted: true };
      };
      let summary: Awaited<ReturnType<typeof summarize>>;
      try {
        summary = await withHeartbeat(summarize, () => progress);
      } catch (error) {
        throw modelFailure(error, summaryModel);
      }
      return outcome(summary, {
        parsedAs: summary.parsedAs,
        responseFormat,
        reprompted: summary.reprompted,
        chunks: chunks.length,
        llm: { model: summaryModel, ...usage, durationMs: Date.now() - started },
      });
    },

    /**
     * Carries the stored plan out: stores and counts each replacement, writes the removed messages (their original
     * bodies) as JSONL, the new context manifest and the event. Returns the new context and the event's summary
     * (the removed items stay in S3, so the result's size does not grow with what left).
     */
    async applyCompaction(input: ApplyCompactionInput): Promise<ApplyOutcome> {
      const { seq } = input;
      const agent = agentLife(input);
      const { plan, context, policy, trigger, cooldown } = await load<StoredPlan>(input.planKey);
      // Each original is read once, for its replacement and for the removed segment.
      const originals = new Map<string, Promise<ChatMessage>>();
      const original = (key: string) => {
        if (!originals.has(key)) originals.set(key, load<ChatMessage>(key));
        return originals.get(key)!;
      };
      const byId = new Map(context.map((m) => [m.id, m]));
      // A truncation with a token budget is cut by counting, in the agent's encoding and with its margin.
      const counting = { counter: await loadTokenCounter(input.counting.encoding), margin: input.counting.margin };
      const replacements: Record<string, MessageRecord> = {};
      for (const op of plan.operations) {
        if (op.op === 'keep' || op.op === 'drop') continue;
        const meta = byId.get(op.id)!;
        const ref = originalKeyOf(meta);
        const body = replacementBody(await original(ref), meta, op, policy.toolResults.marker, counting);
        replacements[op.id] = await save(replacedKey(agent, seq, op.id), body, input.counting, {
          id: op.id,
          kind: REPLACED_KIND[op.op],
          ref,
        });
      }
      const next = applyPlan(
        context,
        plan,
        replacements,
        input.summary?.record,
        input.summary?.ledgerRecord,
      ) as MessageRecord[];
      // The coverage invariant: each message of the context it was made for is kept or removed, exactly once.
      const violations = compactionCoverage(context, next, plan.removed);
      if (violations.length > 0 && deps.strictInvariants) {
        throw ApplicationFailure.nonRetryable(
          `coverage invariant broken by compaction ${seq}: ${violations.join('; ')}`,
          FAILURE.invariantViolated,
        );
      }
      const removedLines = await Promise.all(
        plan.removed.map(async (item) => JSON.stringify({ ...item, message: await original(item.key) })),
      );
      const keys = {
        event: compactionKey(agent, seq, 'event.json'),
        removed: compactionKey(agent, seq, 'removed.jsonl'),
        context: compactionKey(agent, seq, 'context.json'),
      };
      const removedSegment = removedLines.join('\n') + (removedLines.length ? '\n' : '');
      await store.put(keys.removed, removedSegment, 'application/x-ndjson');
      await store.put(keys.context, JSON.stringify(next.map((m) => m.key)), 'application/json');
      const tokensAfter = input.fixedTokens + next.reduce((sum, m) => sum + m.tokens, 0);
      // The cost decision's estimate again, from what the compaction left and what the summary call used.
      const llm = input.summary?.llm;
      const cost = policy.cost
        ? estimateCost(
            policy.cost,
            plan.before.tokens,
            tokensAfter,
            llm?.promptTokens ?? 0,
            llm?.completionTokens ?? 0,
            plan.cost?.remainingTurns, // the pace the plan priced
          )
        : undefined;
      // The loop guard's verdict (policy `loopGuard`): ineffective or not, how many in a row, a pause. A plan stored
      // before masking passes has no cooldown to judge from.
      const judged: JudgedCompaction = {
        trigger,
        routine: !!plan.maskPass || !!plan.toolResultCut,
        tokensBefore: plan.before.tokens,
        tokensAfter,
        ...(plan.target.messages !== undefined || plan.target.turns !== undefined
          ? { messages: { before: plan.before.messages, after: next.length } }
          : {}),
      };
      const verdict = cooldown ? judgeCompaction(policy, cooldown, judged) : undefined;
      const grew = tokensAfter > plan.before.tokens;
      const event: CompactionEvent = {
        seq,
        trigger,
        reason: plan.reason,
        at: input.at,
        strategies: plan.steps.map((s) => s.strategy),
        notes: [
          ...plan.steps.flatMap((s) => (s.note ? [`${s.strategy}: ${s.note}`] : [])),
          ...violations.map((problem) => `coverage invariant broken: ${problem}`),
          // Never worse in silence: a compaction that grew the context says so (the guard's note says it too).
          ...(verdict?.ineffective ? [loopGuardNote(policy, verdict, judged)] : []),
          ...(grew && !verdict?.ineffective
            ? [`grew the context from ${plan.before.tokens} to ${tokensAfter} tokens`]
            : []),
        ],
        tokensBefore: plan.before.tokens,
        tokensAfter,
        messagesBefore: plan.before.messages,
        messagesAfter: next.length,
        targetTokens: plan.target.tokens,
        reachedTarget: tokensAfter <= plan.target.tokens && plan.reachedTarget,
        ...(plan.shortfall ? { shortfall: plan.shortfall } : {}),
        removedCount: plan.removed.length,
        removed: plan.removed,
        ...(input.summary
          ? {
              summaryTokens: input.summary.record.tokens,
              summaryParsedAs: input.summary.parsedAs,
              responseFormat: input.summary.responseFormat,
              ...(input.summary.chunks && input.summary.chunks > 1 ? { summaryChunks: input.summary.chunks } : {}),
              facts: input.summary.facts,
              llm: input.summary.llm,
            }
          : {}),
        ...(cost ? { cost } : {}),
        ...(verdict ? { loopGuard: verdict } : {}),
        durationMs: Date.parse(input.at) - input.startedAt,
        keys,
        ...(input.instructions ? { instructions: input.instructions } : {}),
      };
      await store.put(keys.event, JSON.stringify(event), 'application/json');
      recordCompaction(event, Buffer.byteLength(removedSegment)); // the metrics (activities/telemetry.ts)
      // The cooldown counts from the tokens this compaction actually left, as the workflow's state does
      // (cooldownAfter, with the loop guard's verdict): a masking pass moves only its own floor.
      const after = cooldown
        ? cooldownAfter(cooldown, { trigger, maskPass: plan.maskPass, tokensAfter, guard: verdict })
        : { consecutive: input.consecutive, lastTokensAfter: tokensAfter };
      const gate = gateOf(policy, input.window, after);
      const held = next.map((record) => unkeyedRecord(agent, record));
      return { context: held, event: summaryOfEvent(event), gate, ...(violations.length ? { violations } : {}) };
    },
  };
  // Planning and applying heartbeat too: a worker that dies in the middle is noticed within the heartbeat timeout.
  return {
    ...steps,
    planCompaction: (input: PlanCompactionInput) => withHeartbeat(() => steps.planCompaction(input)),
    applyCompaction: (input: ApplyCompactionInput) => withHeartbeat(() => steps.applyCompaction(input)),
  };
}
