/**
 * Named presets: each seed system's documented compaction behaviour as a complete policy (configuration, not
 * forked code), and `default`, ours. Where a system's documentation and its current code differ, the preset follows
 * the documentation; docs/compaction.md (section Presets) says what the code does now.
 *
 * @example
 *   resolvePolicy({ preset: 'octomind' }) // pressure levels 60k/120k/160k → 2×/4×/8×, cooldown, cost decision
 */
import { DEFAULT_LOOP_GUARD, MAX_CONTEXT_MESSAGES, PolicyError } from './policy.ts';
import { mergePolicy } from './policy-merge.ts';
import { validatePolicy } from './policy-validation.ts';
import type { CompactionPolicy, PolicyOverrides } from './policy.ts';

/**
 * The default preset's prices per million tokens: GPT-5's list prices (input 1.25, cached input 0.125, the default
 * 0.1×, output 10). An agent's own prices override them (`compaction.cost`).
 */
const DEFAULT_COST = { inputPerMillion: 1.25, summaryOutputPerMillion: 10 };

/** Ours: cheap deterministic steps first (a tool result superseded by a newer one of the same call becomes a marker
 * naming it; masking old tool output matches LLM summaries at half the cost), then a
 * structured summary that keeps the user's words, then truncation; the newest 4 steps and the last 3 exchanges of
 * the conversation protected; a cooldown against loops; the hard limit. */
const DEFAULT: CompactionPolicy = {
  preset: 'default',
  triggerRatio: 0.8,
  triggerWhen: 'reaches',
  targetRatio: 0.5,
  backgroundRatio: 0.7,
  maxMessages: 1_000,
  countMessages: 'all',
  holdInToolLoop: false,
  escalate: false,
  keepSteps: 4,
  keepTurns: 3,
  keepMessages: 6,
  reserveRatio: 0.1,
  cooldown: [0.1, 0.2, 0.4, 0.8, 1],
  strategies: [
    'supersede-tool-results',
    'truncate-tool-results',
    'mask-tool-results',
    'offload-large',
    'summarize',
    'truncate-rounds',
    'halve',
  ],
  oneStrategyPerCheck: false,
  toolResults: {
    maxTokens: 8_000,
    maxChars: 32_000,
    headChars: 8_000,
    tailChars: 4_000,
    marker: '[… {omitted} characters cut; the full result is stored: context_reload("{ref}") …]',
    olderTurnsOnly: false,
  },
  mask: { minTokens: 200, fromRatio: 0.5, atLeastRatio: 0.1 },
  offload: { minChars: 16_000, previewChars: 600, includeProtected: false },
  summary: {
    maxTokens: 2_000,
    placement: 'message',
    span: 'all',
    keepUserTokens: 2_000,
    fallback: 'truncate-rounds',
    withoutModel: 'extractive',
    // Ours: the summary rides the agent's prompt cache (its own request up to the span's end, then the instruction).
    request: 'conversation',
  },
  truncateRounds: { perStep: 1 },
  hardLimitRatio: 0.95,
  // Ours, and kept by every seed preset below (a safety net no seed documents): 3 ineffective compactions at most.
  loopGuard: DEFAULT_LOOP_GUARD,
  // Ours: every automatic compaction (the trigger, the soft threshold, the masking pass, a cut) priced against the
  // prompt cache it invalidates (compaction-value.ts), cached input at 0.1× (the default); the decision depends on the
  // ratios of the prices, not on their level. The seed presets below other than octomind have none.
  cost: DEFAULT_COST,
};

/** AstrBot: 82% of the window before every request; an LLM summary keeping the last 4 rounds, falling back to
 * dropping the oldest round at a time without a summary model (inside an agent loop, a round is a step); then
 * halving until it fits. */
const ASTRBOT: CompactionPolicy = {
  ...DEFAULT,
  cost: undefined, // no cost decision in its document
  preset: 'astrbot',
  backgroundRatio: undefined, // the system compacts before the call, blocking
  triggerRatio: 0.82,
  targetRatio: 0.8,
  holdInToolLoop: true, // "does not compress during tool invocations": the hard limit only, inside a tool loop
  maxMessages: undefined,
  keepSteps: 2,
  keepTurns: 3, // with the current round: the last 4 rounds
  keepMessages: 0,
  reserveRatio: 0,
  cooldown: [],
  strategies: ['summarize', 'halve'],
  mask: { minTokens: DEFAULT.mask.minTokens }, // no masking pass below the trigger (ours)
  // Its own summary prompt over the messages (a customizable prompt in its document).
  summary: {
    ...DEFAULT.summary,
    keepUserTokens: 0,
    span: 'older-rounds', // the last 4 rounds stay whole: a long round among them is halved, not summarized (#6196)
    fallback: 'truncate-rounds',
    withoutModel: 'fallback',
    request: 'transcript',
  },
  truncateRounds: { perStep: 1, until: 'trigger' }, // one round at a time until the context meets 82%
};

/** chatgpt-on-wechat: more than 20 turns or 50,000 tokens; before each decision loop, older tool results over
 * 20,000 characters cut to head and tail; the oldest half of the turns (of the steps, inside one long turn) trimmed
 * once and summarized into the first kept user message; under 5 turns, only each turn's first user text and last
 * reply; on a provider overflow, every text to 10,000 characters and 5 turns, then the history cleared. Ours: under
 * 5 turns the tool chains into the summary too (the coverage invariant), and down to the message bound (`trim-turns`,
 * engine/planner/removing.ts). */
const CHATGPT_ON_WECHAT: CompactionPolicy = {
  ...DEFAULT,
  cost: undefined, // no cost decision in its document
  preset: 'chatgpt-on-wechat',
  backgroundRatio: undefined, // the system compacts before the call, blocking
  triggerRatio: 0.9,
  triggerWhen: 'exceeds', // tokens > budget
  targetRatio: 0.5,
  maxTokens: 50_000,
  maxTurns: 20,
  maxMessages: undefined,
  keepSteps: 0,
  keepTurns: 0,
  keepMessages: 0,
  reserveRatio: 0,
  cooldown: [],
  strategies: ['truncate-tool-results', 'trim-turns'],
  mask: { minTokens: DEFAULT.mask.minTokens }, // no masking pass below the trigger (ours)
  toolResults: {
    maxTokens: 10_000_000,
    maxChars: 20_000,
    headChars: 10_000,
    tailChars: 5_000,
    marker: '\n\n[... {omitted} characters omitted from this tool result ...]\n\n',
    olderTurnsOnly: true,
  },
  summary: {
    ...DEFAULT.summary,
    placement: 'first-kept-user',
    span: 'oldest-half',
    keepUserTokens: 0,
    fallback: 'halve',
    request: 'transcript', // its own summary prompt over the trimmed turns
  },
};

/**
 * AgentScope's truncation marker and system reminder, as its agent appends them to the beginning it keeps of a tool
 * result over `tool_result_limit`; `{ref}` names the stored original (what AgentScope's offloader returns as the file,
 * here the key `context_reload` reads).
 */
export const AGENTSCOPE_TRUNCATION_REMINDER =
  '<<<TRUNCATED>>>\n<system-reminder>The remaining content has been omitted for limited context. You can refer to ' +
  "the file in '{ref}' for the truncated content if needed.</system-reminder>";

/** Characters of a tool result a cut may keep when only its token limit bounds it (below `maxChars`). */
const MAX_TOOL_RESULT_CHARS_KEPT = 50_000_000;

/** AgentScope (Python): before every reasoning step, trigger_ratio × window over system prompt, summary, context
 * and tool schemas; a tool result over tool_result_limit tokens cut to its beginning, then `<<<TRUNCATED>>>` and a
 * system reminder naming the stored original, right after its call; a
 * five-field summary of the older messages, its boundary inside the current reply; the recent ones within
 * reserve_ratio × window kept. */
const AGENTSCOPE: CompactionPolicy = {
  ...DEFAULT,
  cost: undefined, // no cost decision in its document
  preset: 'agentscope',
  backgroundRatio: undefined, // the system compacts before the call, blocking
  triggerRatio: 0.8,
  triggerWhen: 'exceeds', // tokens > trigger_ratio × context_size
  targetRatio: 0.4,
  maxMessages: undefined,
  keepSteps: 0,
  keepTurns: 0,
  keepMessages: 0,
  reserveRatio: 0.1,
  cooldown: [],
  strategies: ['truncate-tool-results', 'summarize', 'halve'],
  mask: { minTokens: DEFAULT.mask.minTokens }, // no masking pass below the trigger (ours)
  toolResults: {
    maxTokens: 2_048,
    maxChars: 100_000_000,
    // The result's beginning, as much as the limit holds (the cut is counted to it), and no tail.
    headChars: MAX_TOOL_RESULT_CHARS_KEPT,
    tailChars: 0,
    marker: AGENTSCOPE_TRUNCATION_REMINDER,
    olderTurnsOnly: false,
  },
  summary: { ...DEFAULT.summary, keepUserTokens: 0, request: 'transcript' }, // its own summary prompt
};

/** AgentScope Java AutoContextMemory: 100 messages or 75% of the window, before each reasoning step; at most one
 * strategy per check, in its order: a run of more than 6 consecutive tool messages (outside the last 50, before the
 * latest final answer) compressed into one assistant message by the LLM; large messages (> 5 KiB) before the latest
 * final answer offloaded to 200-character previews (first outside the last 50 messages, then inside); a historical
 * round summarized on its own, its user message kept verbatim; large current-round results cut; the current round
 * summarized down to its newest step; then halving. */
const AGENTSCOPE_JAVA: CompactionPolicy = {
  ...DEFAULT,
  cost: undefined, // no cost decision in its document
  preset: 'agentscope-java',
  backgroundRatio: undefined, // the system compacts before the call, blocking
  triggerRatio: 0.75,
  targetRatio: 0.5,
  maxMessages: 99, // msgThreshold 100: compact at 100 messages of its working memory (more than 99)
  countMessages: 'working-memory', // not the system prompt, not longrun's task ledger
  keepSteps: 0,
  keepTurns: 1,
  keepMessages: 50,
  reserveRatio: 0,
  cooldown: [],
  strategies: [
    'compress-tool-runs',
    'offload-large',
    'summarize-rounds',
    'truncate-tool-results',
    'summarize-current-turn',
    'halve',
  ],
  oneStrategyPerCheck: true,
  // Its msgThreshold starts the strategies; once none applies it does nothing more ("All compression strategies
  // exhausted"): halving (ours) only at or over 75% of the window.
  halveOnCountLimit: false,
  toolRunMessages: 6, // minConsecutiveToolMessages
  mask: { minTokens: 0 },
  offload: { minChars: 5_120, previewChars: 200, includeProtected: true, beforeLatestAnswer: true },
  summary: { ...DEFAULT.summary, keepUserTokens: 0, request: 'transcript' }, // its own summary prompt
};

/**
 * The remaining calls Octomind's document prices a compaction over while the session's pace is unknown: its example
 * compresses 100k tokens to 50k "over 10 turns" and calls that a net gain.
 */
const OCTOMIND_EXPECTED_REMAINING_TURNS = 10;

/** Octomind: pressure levels 60k → 2×, 120k → 4×, 160k → 8× over the whole request, escalating with consecutive
 * compactions; the last 4 messages kept; exponential cooldown; skipped when it would cost more than it saves over
 * the remaining calls: the session's pace, or the document's 10 until the pace is known (the hard limit and the
 * message bound override it). */
const OCTOMIND: CompactionPolicy = {
  ...DEFAULT,
  preset: 'octomind',
  backgroundRatio: undefined, // the system compacts before the call, blocking
  triggerRatio: 0.9,
  targetRatio: 0.5,
  maxMessages: undefined,
  pressureLevels: [
    { atTokens: 60_000, reduction: 2 },
    { atTokens: 120_000, reduction: 4 },
    { atTokens: 160_000, reduction: 8 },
  ],
  escalate: true,
  keepSteps: 0,
  keepTurns: 0,
  keepMessages: 4,
  reserveRatio: 0,
  cooldown: [0.1, 0.2, 0.4, 0.8, 1],
  strategies: ['summarize', 'halve'],
  mask: { minTokens: DEFAULT.mask.minTokens }, // no masking pass below the trigger (ours)
  summary: { ...DEFAULT.summary, keepUserTokens: 0, request: 'transcript' }, // its own summary prompt
  cost: {
    inputPerMillion: 3,
    // Octomind's document prices every remaining call at the full input price (no prompt cache).
    cachedInputPerMillion: 3,
    summaryOutputPerMillion: 15,
    // Until the session's pace is known, the remaining calls its document prices: 100k → 50k tokens over 10 turns.
    remainingTurnsUntilPace: OCTOMIND_EXPECTED_REMAINING_TURNS,
  },
};

export const PRESETS: Readonly<Record<string, CompactionPolicy>> = {
  // Ours alone tells the model its budget at the end of each request (the seeds document no such note).
  default: { ...DEFAULT, budgetNote: true },
  astrbot: ASTRBOT,
  'chatgpt-on-wechat': CHATGPT_ON_WECHAT,
  agentscope: AGENTSCOPE,
  'agentscope-java': AGENTSCOPE_JAVA,
  octomind: OCTOMIND,
};

export const PRESET_NAMES = Object.keys(PRESETS);

/** A preset by name, with overrides applied and the result validated. Throws {@link PolicyError}. */
export function resolvePolicy(config: PolicyOverrides & { preset?: string } = {}): CompactionPolicy {
  const name = config.preset ?? 'default';
  const base = PRESETS[name];
  if (!base) throw new PolicyError('preset', name, `one of ${PRESET_NAMES.join(', ')}`);
  const unknown = Object.keys(config).filter(
    (key) =>
      !(key in DEFAULT) &&
      ![
        'pressureLevels',
        'maxTokens',
        'maxTurns',
        'cost',
        'review',
        'tools',
        'pinRatio',
        'budgetNote',
        'toolRunMessages',
        'halveOnCountLimit',
      ].includes(key),
  );
  if (unknown.length > 0)
    throw new PolicyError(unknown[0]!, config[unknown[0] as keyof typeof config], 'not a policy field');
  const policy = mergePolicy(base, config);
  for (const key of Object.keys(policy) as (keyof CompactionPolicy)[]) {
    if (policy[key] === undefined) delete policy[key];
  }
  policy.maxMessages ??= MAX_CONTEXT_MESSAGES; // the state's bound, for presets without a message limit
  return validatePolicy(structuredClone({ ...policy, preset: name }));
}
