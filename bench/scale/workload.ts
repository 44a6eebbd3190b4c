/**
 * The scale benchmark's workload, pure and deterministic per seed: when each agent starts, when each of its
 * messages is due (a Poisson process), and the text of every user message, model reply and tool result (1–10 KB of
 * English-like words). The driver (bench/scale/run.ts), the scripted model (model.ts) and the worker's tool
 * (worker.ts) all draw from here, so one seed gives one workload.
 */
import type { StartAgentOptions } from '../../client/agents.ts';
import { seededRandom } from '../chaos/model.ts';

/** Bytes of each message, reply and tool result: uniform in this range. */
export const MESSAGE_BYTES = { min: 1_024, max: 10_240 } as const;

/** The agent's name in the run: a0001, a0002, … */
export const agentName = (index: number) => `a${String(index + 1).padStart(4, '0')}`;

/** A number from text (FNV-1a, 32 bits): the seed of a draw that must be the same wherever it is made. */
export function hashOf(text: string): number {
  let hash = 0x81_1c_9d_c5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01_00_01_93);
  }
  return hash >>> 0;
}

/** A draw in [0, 1) keyed by `parts`: the same parts give the same value in every process. */
export function drawFor(...parts: (string | number)[]): number {
  return seededRandom(hashOf(parts.join('/')))();
}

/** Uniform in [min, max], keyed by `parts`. */
export function uniformFor(min: number, max: number, ...parts: (string | number)[]): number {
  return min + drawFor(...parts) * (max - min);
}

/**
 * When each agent starts, in ms from the run's start: spread evenly over `rampMs`, or all within the first second
 * when `rampMs` is 0 or less (the burst variant).
 */
export function startOffsets(agents: number, rampMs: number): number[] {
  const span = rampMs > 0 ? rampMs : 1_000;
  return Array.from({ length: agents }, (_, i) => Math.floor((i * span) / agents));
}

/**
 * The times (ms from the run's start) at which an agent's messages are due: the first when it starts (the task it
 * is started with), then a Poisson process of mean gap `meanGapMs` (exponential gaps), every one before `untilMs`.
 */
export function poissonSchedule(seed: number, agent: string, startMs: number, untilMs: number, meanGapMs: number) {
  if (!(meanGapMs > 0)) throw new RangeError(`meanGapMs must be positive (got ${meanGapMs})`);
  const draw = seededRandom(hashOf(`${seed}/${agent}/schedule`));
  const due: number[] = [];
  for (let at = startMs; at < untilMs; at += -Math.log(1 - draw()) * meanGapMs) due.push(Math.round(at));
  return due;
}

const WORDS = (
  'the agent checked logs queue worker retry timeout request reply message context window token summary plan ' +
  'apply store bucket object key history event update signal query activity workflow task server client model ' +
  'tool call result error latency memory cache budget turn step state record report table figure run deploy ' +
  'config setting value limit threshold trigger policy preset compaction offload reload reference file line ' +
  'function module import export build test check lint format commit branch merge review note detail reason ' +
  'because after before while until when then also still only every each some many most few more less first ' +
  'last next previous current new old large small fast slow open closed ready waiting running stopped failed ' +
  'and or but with without for from into onto over under about across between through within of to in on at'
).split(' ');

/** About `bytes` characters of English-like text (words, sentences, paragraphs), the same for the same `key`. */
export function filler(key: string, bytes: number): string {
  const draw = seededRandom(hashOf(key));
  const parts: string[] = [];
  let length = 0;
  let sentence = 0;
  while (length < bytes) {
    let word = WORDS[Math.floor(draw() * WORDS.length)]!;
    if (sentence === 0) word = word[0]!.toUpperCase() + word.slice(1);
    sentence++;
    const end = sentence > 6 && draw() < 0.15;
    if (end) sentence = 0;
    const piece = `${word}${end ? (draw() < 0.2 ? '.\n\n' : '. ') : ' '}`;
    parts.push(piece);
    length += piece.length;
  }
  return parts.join('').slice(0, bytes);
}

/** Bytes of the piece of text named by `parts`: uniform in {@link MESSAGE_BYTES}. */
export const bytesFor = (...parts: (string | number)[]) =>
  Math.round(uniformFor(MESSAGE_BYTES.min, MESSAGE_BYTES.max, ...parts));

/** The tag every user message starts with: it names the agent and the message's number, so the model can tell. */
export const messageTag = (agent: string, n: number) => `[scale ${agent} #${n}]`;
const TAG = /\[scale (\S+) #(\d+)\]/;

/** The agent and message number a text's tag names, if it has one. */
export function readTag(text: string): { agent: string; n: number } | undefined {
  const match = TAG.exec(text);
  return match ? { agent: match[1]!, n: Number(match[2]) } : undefined;
}

/** User message `n` (1-based) of `agent`: its tag, then 1–10 KB of text. */
export function userMessage(seed: number, agent: string, n: number): string {
  const tag = messageTag(agent, n);
  return `${tag} ${filler(`${seed}/${agent}/${n}/user`, bytesFor(seed, agent, n, 'user') - tag.length - 1)}`;
}

/**
 * The one message an idle agent is sent when it is registered (`--registered`): tagged as message 1, so the model
 * answers it as it answers any (1–10 KB, a quarter of the time after a `lookup` call); short itself.
 */
export function registrationMessage(agent: string): string {
  return `${messageTag(agent, 1)} You are registered with the scale benchmark: answer this, then wait for work.`;
}

/**
 * Steer `k` (1-based) of the run, sent to `agent` mid-turn: short, and tagged `[steer …]`, which the model's tag
 * (`[scale …]`) does not match, so the model goes on attributing the turn to the message that opened it.
 */
export const steerText = (agent: string, k: number) =>
  `[steer ${agent} #${k}] From now on, keep each answer to the point.`;

/**
 * When the steers are due, ms from `fromMs` (inclusive) to `untilMs` (exclusive): evenly, `perMinute` a minute, the
 * first one gap after `fromMs`; none at 0 a minute.
 */
export function steerSchedule(perMinute: number, fromMs: number, untilMs: number): number[] {
  if (!(perMinute > 0)) return [];
  const gap = 60_000 / perMinute;
  const due: number[] = [];
  for (let k = 1; fromMs + k * gap < untilMs; k++) due.push(Math.round(fromMs + k * gap));
  return due;
}

/** How every agent of the scale benchmark is started, active or idle: agent `name` under `agentId`. */
export function agentStart(agentId: string, name: string, taskQueue: string, window: number): StartAgentOptions {
  return {
    agentId,
    model: 'gpt-4o-mini',
    taskQueue,
    systemPrompt: `You are agent ${name} of the scale benchmark. Answer each message.`,
    modelOverride: { window },
  };
}
