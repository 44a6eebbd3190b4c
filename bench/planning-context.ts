/**
 * A synthetic working context for the planner's scaling (bench/planning.ts, test/unit/engine/planner-scaling.test.ts):
 * a system prompt, the goal, then a long tool loop (assistant messages calling one to three tools, results of varied
 * sizes, some large, some reading a resource read before), a final answer and a new user message every few hundred
 * messages, ending inside the loop. Deterministic: the same `n` and `seed` give the same messages.
 */
import type { MessageMeta } from '../engine/messages.ts';
import type { PlanInput } from '../engine/planner/index.ts';
import type { CompactionPolicy } from '../engine/policy.ts';

/** A small deterministic generator (mulberry32): the same seed gives the same numbers. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Messages between two user messages, about (a turn ends with the assistant's final answer). */
export const TURN_MESSAGES = 400;

/** A context of `n` messages (exactly): the goal's turn and those after it, the last one in progress. */
export function longToolLoop(n: number, { seed = 41, turnMessages = TURN_MESSAGES, scale = 1 } = {}): MessageMeta[] {
  const rand = random(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const size = (lo: number, hi: number) => Math.max(1, Math.round(int(lo, hi) * scale));
  const out: MessageMeta[] = [];
  let calls = 0;
  const add = (meta: Omit<MessageMeta, 'id' | 'key'>) => {
    const id = `m${String(out.length + 1).padStart(6, '0')}`;
    out.push({ id, key: `agents/bench/messages/${id}.json`, ...meta });
  };
  add({ role: 'system', tokens: 800, chars: 3_200 });
  add({ role: 'user', tokens: 120, chars: 480 });
  let sinceUser = 0;
  while (out.length < n) {
    const left = n - out.length;
    if (sinceUser >= turnMessages && left >= 3) {
      const answer = int(80, 600);
      add({ role: 'assistant', tokens: answer, chars: answer * 4 });
      const request = int(20, 300);
      add({ role: 'user', tokens: request, chars: request * 4 });
      sinceUser = 0;
      continue;
    }
    const results = Math.min(left - 1, rand() < 0.8 ? 1 : int(2, 3));
    if (results < 1) {
      add({ role: 'assistant', tokens: 100, chars: 400 });
      break;
    }
    const ids = Array.from({ length: results }, () => `call_${++calls}`);
    add({ role: 'assistant', tokens: int(25, 120), chars: 0, toolCallIds: ids });
    for (const id of ids) {
      const large = rand() < 0.05;
      const tokens = large ? size(6_000, 20_000) : size(40, 2_400);
      const tool = ['read_file', 'run', 'search', 'list'][int(0, 3)]!;
      const rereads = rand() < 0.3;
      add({
        role: 'tool',
        tokens,
        chars: tokens * int(3, 5),
        toolCallId: id,
        tool,
        ...(rereads ? { resource: `${tool}:${int(0, 40)}` } : {}),
      });
    }
    sinceUser += 1 + results;
  }
  return out;
}

/** The contexts and plans measured: how the loop is shaped, what fired, the window. */
export const SCENARIOS = {
  /** One long turn (no final answer yet) of small results: the message limit fires, automatic. */
  loop: { trigger: 'auto', summarizer: 'available', window: 1_047_576, turnMessages: Infinity, scale: 0.05 },
  /** A user message and a final answer every 400 messages, small results: a forced compaction. */
  turns: { trigger: 'forced', summarizer: 'available', window: 1_047_576, turnMessages: 400, scale: 0.05 },
  /** A user message every 10 messages, full-size results: an overflow without a summary model. */
  chat: { trigger: 'overflow', summarizer: 'none', window: 200_000, turnMessages: 10, scale: 1 },
  /**
   * A user message every 10 messages, small results: a forced compaction, for one strategy alone (the plan input's
   * `strategies`): each strategy over the whole context.
   */
  alone: { trigger: 'forced', summarizer: 'available', window: 1_047_576, turnMessages: 10, scale: 0.05 },
} as const satisfies Record<
  string,
  {
    trigger: PlanInput['trigger'];
    summarizer: PlanInput['summarizer'];
    window: number;
    turnMessages: number;
    scale: number;
  }
>;
export type Scenario = (typeof SCENARIOS)[keyof typeof SCENARIOS];

/** The plan input of `scenario` for `context` under `policy`: the goal the first user message, a first compaction. */
export function scenarioInput(
  scenario: Scenario,
  policy: CompactionPolicy,
  context: MessageMeta[],
  extra: Partial<PlanInput> = {},
): PlanInput {
  return {
    context,
    policy,
    window: scenario.window,
    fixedTokens: 2_000,
    trigger: scenario.trigger,
    cooldown: { consecutive: 0, lastTokensAfter: 0 },
    summarizer: scenario.summarizer,
    goalId: context[1]!.id,
    callsSinceCompaction: context.filter((m) => m.role === 'assistant').length,
    ...extra,
  };
}
