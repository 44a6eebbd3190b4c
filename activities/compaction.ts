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
import { planCompaction, REPLACED_KIND } from '../engine/planner/index.ts';
import type { Plan, SummarySpec } from '../engine/planner/index.ts';
import type { CompactionPolicy } from '../engine/policy.ts';
import { estimateCost } from '../engine/cost.ts';
import { gateAfterMaskSkip, gateAfterSkip, gateOf } from '../engine/gates.ts';
import { judgeCompaction, loopGuardNote } from '../engine/loop-guard.ts';
import type { JudgedCompaction } from '../engine/loop-guard.ts';
import { cooldownAfter, holdGrowth } from '../engine/trigger.ts';
import type { CooldownState } from '../engine/trigger.ts';
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
import {
  compactionKey,
  messageKey,
  replacedKey,
  agentLife,
  ledgerIdOf,
  messageIdOf,
  seqOf,
  summaryIdOf,
} from '../contract/keys.ts';
import { keyedRecord, unkeyedRecord } from '../contract/records.ts';
import { summaryOfEvent } from '../contract/results.ts';
import type { CompactionEvent, Draft } from '../contract/results.ts';
import type { MessageRecord } from '../contract/records.ts';
import type {
  ApplyCompactionInput,
  ApplyOutcome,
  PlanCompactionInput,
  PlanOutcome,
  ReviseSummaryInput,
  RevertContextInput,
  StoreDraftInput,
  RevertOutcome,
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

/**
 * What a revert to before an event restores, stored with the event (a compaction's plan, a revert's own record): the
 * context it was made for, the task ledger then, and the first sequence number after that context.
 */
export interface StoredBefore {
  context: MessageRecord[];
  /** Absent in plans stored before reverts existed: a revert to before such an event keeps the ledger it finds. */
  ledger?: TaskLedger;
  /** Absent in plans stored before reverts existed: read as the last message's sequence number + 1. */
  tailFromSeq?: number;
  /** Set in a revert's own record: the event it reverted to. */
  revertedTo?: number;
}

interface StoredPlan extends StoredBefore {
  plan: Plan;
  policy: CompactionPolicy;
  trigger: Plan['trigger'];
  /** The cooldown the plan was made under (absent in plans stored before masking passes). */
  cooldown?: CooldownState;
}

/** Whether a stored key is a summary message's (the summarizer's, or a reviewer's edit of it). */
function isSummaryKey(key: string): boolean {
  return key.endsWith('/summary.json') || key.endsWith('/summary-edited.json');
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
  const { load, save, measure } = storedObjects(store);

  /**
   * A summary's span: the previous summaries in it, the rest, and the must-keep facts of what leaves the context
   * with it (the previous summaries and the messages not kept verbatim), which the summary must keep.
   */
  async function spanOf(spanKeys: readonly string[], keptKeys: readonly string[] = []) {
    const span = await Promise.all(spanKeys.map((key) => load<ChatMessage>(key)));
    const isPrevious = (i: number) => isSummaryKey(spanKeys[i]!);
    const previous = span.filter((_, i) => isPrevious(i));
    const rest = span.filter((_, i) => !isPrevious(i));
    const kept = new Set(keptKeys);
    const leaving = span.filter((_, i) => !isPrevious(i) && !kept.has(spanKeys[i]!));
    return { previous, rest, facts: extractFacts([...previous, ...leaving]) };
  }

  /** Stores the summary message (or the user message it was prepended to) and counts it. */
  async function storeSummary(input: SummarizeInput, rendered: string): Promise<MessageRecord> {
    const host = input.prependToKey ? await load<ChatMessage>(input.prependToKey) : undefined;
    const record = await save(
      compactionKey(input, input.seq, 'summary.json'),
      summaryMessage(rendered, host),
      input.counting,
      { id: summaryIdOf(input.seq), kind: 'summary' },
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
      { id: ledgerIdOf(input.seq), kind: 'ledger' },
    );
  }

  const steps = {
    /** The engine's plan over the context's metadata; stored for the apply step, summarized for the workflow. */
    async planCompaction(input: PlanCompactionInput): Promise<PlanOutcome> {
      const { agentId, life, seq, summarizerFailed, ledger, tailFromSeq, ...rest } = input;
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
        ...(ledger ? { ledger } : {}),
        ...(tailFromSeq !== undefined ? { tailFromSeq } : {}),
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
      const { previous, rest, facts } = await spanOf(input.spanKeys, input.keptKeys);
      const previousText = previous.map((m) => textOf(m.content)).join('\n\n');
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

    /** Stores a draft for review (draft.json: the draft with its summary's text) and returns that text. */
    async storeDraft(input: StoreDraftInput): Promise<string | undefined> {
      const { draft } = input;
      const text = draft.summaryKey ? textOf((await load<ChatMessage>(draft.summaryKey)).content) : undefined;
      const stored: Draft = { ...draft, ...(text !== undefined ? { summary: text } : {}) };
      await store.put(compactionKey(input, input.seq, 'draft.json'), JSON.stringify(stored), 'application/json');
      return text;
    },

    /**
     * A reviewer's edit of a draft's summary: stored as a new object (the summarizer's stays), its text the edit,
     * then the must-keep facts of the span the edit (with the ledger) lost, pinned verbatim, as the summarizer pins
     * them. The summarizer's ledger stays. Returns the outcome the apply step takes.
     */
    async reviseSummary(input: ReviseSummaryInput): Promise<SummaryOutcome> {
      const agent = agentLife(input);
      const { plan, context } = await load<StoredPlan>(input.planKey);
      const keyOf = new Map(context.map((m) => [m.id, m.key]));
      const spec = plan.summary;
      if (!spec) throw ApplicationFailure.nonRetryable(`the plan at ${input.planKey} has no summary to edit`);
      const { facts } = await spanOf(
        spec.spanIds.map((id) => keyOf.get(id)!),
        spec.keptUserIds.map((id) => keyOf.get(id)!),
      );
      const check = checkFacts(facts, `${input.text}\n${renderLedger(input.summary.ledger)}`);
      const pins = prioritizeFacts(check.missing, MAX_PINNED_FACTS);
      const text = [input.text, ...(pins.length ? [preservedFactsBlock(pins)] : [])].join('\n\n');
      const original = await load<ChatMessage>(input.summary.record.key);
      const stored = await save(
        compactionKey(agent, input.seq, 'summary-edited.json'),
        { ...original, content: text },
        input.counting,
        { id: input.summary.record.id, kind: 'summary' },
      );
      const covers = input.summary.record.covers;
      return {
        ...input.summary,
        record: covers ? { ...stored, covers } : stored,
        parsedAs: 'edited',
        facts: {
          found: check.found.length,
          missing: check.missing.length,
          reprompted: false,
          pinned: pins.map((f) => f.text),
        },
      };
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
          ...(input.review ? [`review: ${input.review}`] : []),
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

    /**
     * A revert: the context as it was before event `toEvent` (the records its plan, or an earlier revert's record,
     * stored: the same keys, so the model gets the same bytes), then every message stored since, raw, from the
     * messages' own objects, in order. Stores this revert's record (the context and ledger now, for a revert of it),
     * the manifest of the restored part and the event. The ledger comes back with it when it was stored.
     */
    async revertContext(input: RevertContextInput): Promise<RevertOutcome> {
      const { seq, toEvent } = input;
      const agent = agentLife(input);
      const before = await load<StoredBefore>(compactionKey(agent, toEvent, 'plan.json'));
      const restored = before.context;
      const messageSeqs = restored.filter((m) => /^m\d+$/.test(m.id)).map((m) => seqOf(m.id));
      const tailFromSeq = before.tailFromSeq ?? Math.max(0, ...messageSeqs) + 1;
      // Every message stored since that context, as stored (a later compaction may have summarized it).
      const ids = Array.from({ length: Math.max(0, input.lastSeq - tailFromSeq + 1) }, (_, i) =>
        messageIdOf(tailFromSeq + i),
      );
      const since = await Promise.all(
        ids.map(async (id) => {
          const key = messageKey(agent, id);
          return measure(key, await load<ChatMessage>(key), input.counting, { id });
        }),
      );
      const now = input.context.map((record) => keyedRecord(agent, record));
      const record: StoredBefore = {
        context: now,
        ...(input.ledger ? { ledger: input.ledger } : {}),
        tailFromSeq: input.tailFromSeq,
        revertedTo: toEvent,
      };
      const keys = {
        event: compactionKey(agent, seq, 'event.json'),
        removed: compactionKey(agent, seq, 'removed.jsonl'),
        context: compactionKey(agent, seq, 'context.json'),
      };
      await store.put(compactionKey(agent, seq, 'plan.json'), JSON.stringify(record), 'application/json');
      await store.put(keys.context, JSON.stringify(restored.map((m) => m.key)), 'application/json');
      await store.put(keys.removed, '', 'application/x-ndjson'); // a revert removes no message
      const next = [...restored, ...since];
      const tokensOf = (records: readonly { tokens: number }[]) =>
        input.fixedTokens + records.reduce((sum, m) => sum + m.tokens, 0);
      const tokensAfter = tokensOf(next);
      const restoredIds = new Set(next.map((m) => m.key));
      const left = now.filter((m) => !restoredIds.has(m.key)).map((m) => m.id);
      const event: CompactionEvent = {
        seq,
        trigger: 'revert',
        reason: `revert to before event ${toEvent}`,
        at: input.at,
        strategies: ['revert'],
        notes: [
          `restored the ${restored.length} records of the context before event ${toEvent}, then ${since.length} ` +
            `message${since.length === 1 ? '' : 's'} stored since (m${tailFromSeq}…), raw`,
          ...(left.length
            ? [`left the context (kept in storage, back with a revert to before ${seq}): ${left.join(', ')}`]
            : []),
          before.ledger
            ? `task ledger restored as it was before event ${toEvent}`
            : `task ledger kept as it was: event ${toEvent} was stored before ledgers were kept with events`,
        ],
        tokensBefore: tokensOf(now),
        tokensAfter,
        messagesBefore: now.length,
        messagesAfter: next.length,
        targetTokens: tokensAfter,
        reachedTarget: true,
        removedCount: 0,
        removed: [],
        durationMs: Date.parse(input.at) - input.startedAt,
        keys,
      };
      await store.put(keys.event, JSON.stringify(event), 'application/json');
      // The cooldown's first step, from the restored size: the agent's own steps do not compact it again at once
      // (a user message re-arms the trigger, as after any compaction; the hard limit always holds).
      const cooldown: CooldownState = { consecutive: 1, lastTokensAfter: tokensAfter };
      return {
        context: next.map((m) => unkeyedRecord(agent, m)),
        baseLength: restored.length,
        tailFromSeq,
        ...(before.ledger ? { ledger: before.ledger } : {}),
        event: summaryOfEvent(event),
        gate: gateOf(input.policy, input.window, cooldown),
        cooldown,
      };
    },
  };
  // Planning and applying heartbeat too: a worker that dies in the middle is noticed within the heartbeat timeout.
  return {
    ...steps,
    planCompaction: (input: PlanCompactionInput) => withHeartbeat(() => steps.planCompaction(input)),
    applyCompaction: (input: ApplyCompactionInput) => withHeartbeat(() => steps.applyCompaction(input)),
    revertContext: (input: RevertContextInput) => withHeartbeat(() => steps.revertContext(input)),
  };
}
