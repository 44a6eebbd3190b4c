/**
 * The soak's script, pure: what the user says (tasks of many steps, resumes after an interrupt, steers), what the
 * scripted model answers to each request, and what the `work` tool returns at each step (bench/soak/worker.ts).
 *
 * The model reads only the request: the latest user task or resume, or the latest `work` result, says which step comes
 * next (steers and the results of the side calls are skipped over), so a request sent again after a worker kill gets
 * the same answer, and a compaction that keeps the recent tail changes nothing. Now and then a step also calls
 * `context_search` (for a marker of a step long gone from the context) or `context_pin`.
 *
 * Tool results follow the shape of recorded coding-agent loops (mini-SWE-agent, SWE-agent trajectories): most are
 * small (200 B – 2 KB of command output), about one in five reads one of a dozen source files again (3–8 KB, the same
 * text each time it is read), one in thirteen is a long listing or log (10–30 KB) and one in fifty a very large
 * output (50–100 KB). Every result carries a marker (`marker k<task>s<step>x`) that a later search asks for.
 */
import { createHash } from 'node:crypto';
import type { ScriptedReply } from '../../llm/chat-server.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { textOf } from '../../engine/messages.ts';
import { scriptedReply } from '../chaos/model.ts';

/** The agent's name in its messages. */
export const AGENT = 'soak';

/** The user message that starts task `task`, `steps` tool steps long. */
export const taskText = (task: number, steps: number) => `${AGENT} task ${task}: ${steps} steps`;
/** The user message that goes on with task `task` from `step` after its turn was interrupted (the `run`-th resume). */
export const resumeText = (task: number, run: number, step: number, steps: number) =>
  `${AGENT} task ${task} resume ${run}: from step ${step} of ${steps}`;
/** The steer number `seq`: its sequence number is in its text. */
export const steerText = (seq: number) => `${AGENT} steer ${seq}`;

const TASK = /^soak task (\d+): (\d+) steps$/;
const RESUME = /^soak task (\d+) resume (\d+): from step (\d+) of (\d+)$/;
const STEER = /^soak steer \d+$/;
const STEP = /^step (\d+) of (\d+) \(task (\d+) of soak, run (\d+)\)/;

/** Where a task is: the step asked for next, of how many, and which run of it (0, then one per resume). */
export interface Position {
  task: number;
  step: number;
  of: number;
  run: number;
}

/** The call id of a step: each resume's calls have ids of their own (a step done again is a new call). */
export const callIdOf = (p: Position) => `soak-t${p.task}-s${p.step}-r${p.run}`;

/** The marker a step's result carries, which a later search looks for. */
export const markerOf = (task: number, step: number) => `k${task}s${step}x`;

/** A step a few hundred steps back, whose marker a search at `step` asks for (undefined: too early). */
export function searchedStep(step: number): number | undefined {
  return step > 300 ? step - 300 : undefined;
}

/** Every 40th step also searches; every 1,000th (at 500, 1,500, …) also pins a fact. */
export const searchesAt = (step: number) => step % 40 === 0 && searchedStep(step) !== undefined;
export const pinsAt = (step: number) => step % 1_000 === 500;

function call(id: string, name: string, args: object) {
  return { id, type: 'function' as const, function: { name, arguments: JSON.stringify(args) } };
}

/** The reply that asks for step `p` (and maybe a search and a pin beside it). */
export function stepReply(p: Position): ScriptedReply {
  const calls = [call(callIdOf(p), 'work', { task: p.task, step: p.step, of: p.of, run: p.run })];
  const searched = searchedStep(p.step);
  if (searchesAt(p.step) && searched !== undefined) {
    calls.push(call(`${callIdOf(p)}-q`, 'context_search', { query: `marker ${markerOf(p.task, searched)}`, limit: 3 }));
  }
  if (pinsAt(p.step)) {
    calls.push(
      call(`${callIdOf(p)}-p`, 'context_pin', { text: `fact of task ${p.task}: ${markerOf(p.task, p.step)}` }),
    );
  }
  return { content: null, toolCalls: calls };
}

/** What the latest message that says where the task is says: the step to ask for next, or that the task is done. */
export function positionOf(messages: readonly Pick<ChatMessage, 'role' | 'content'>[]): Position | 'done' | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    const text = textOf(message.content);
    if (message.role === 'user') {
      if (STEER.test(text)) continue;
      const task = TASK.exec(text);
      if (task) return { task: Number(task[1]), step: 1, of: Number(task[2]), run: 0 };
      const resume = RESUME.exec(text);
      if (resume) {
        const [t, r, s, of] = [Number(resume[1]), Number(resume[2]), Number(resume[3]), Number(resume[4])];
        return { task: t, step: s, of, run: r };
      }
      return undefined;
    }
    if (message.role === 'tool') {
      const step = STEP.exec(text);
      if (!step) continue; // a search's or a pin's result, or a call the interrupt answered
      const [s, of, t, r] = [Number(step[1]), Number(step[2]), Number(step[3]), Number(step[4])];
      return s < of ? { task: t, step: s + 1, of, run: r } : 'done';
    }
    if (message.role === 'assistant' && !message.content) continue; // the call of the results after it
    if (message.role === 'assistant') return undefined;
  }
  return undefined;
}

/** The model's answer to a request of the agent (`summary`: a compaction's summary request). */
export function soakReply(messages: readonly ChatMessage[], summary: boolean): ScriptedReply {
  if (summary) return scriptedReply(messages as ChatMessage[], true);
  const at = positionOf(messages);
  if (at === 'done') return { content: `${AGENT} task done` };
  if (at === undefined) return { content: `${AGENT}: nothing to do` };
  return stepReply(at);
}

/** Bytes a step's result has after its header, drawn from the corpus's shape by a hash of the step. */
export function resultShape(task: number, step: number): { kind: 'small' | 'file' | 'log' | 'large'; bytes: number } {
  const h = createHash('sha256').update(`${task}/${step}`).digest().readUInt32BE(0);
  const draw = (h % 1_000) / 1_000;
  const within = (lo: number, hi: number) => lo + ((h >>> 10) % (hi - lo));
  if (draw < 0.02) return { kind: 'large', bytes: within(50_000, 100_000) };
  if (draw < 0.095) return { kind: 'log', bytes: within(10_000, 30_000) };
  if (draw < 0.295) return { kind: 'file', bytes: 3_000 + ((h >>> 10) % 12) * 450 };
  return { kind: 'small', bytes: within(200, 2_000) };
}

const WORDS = (
  'const let return if else for while await async function import export from type interface value result error ' +
  'count index key name path file line text item list map set get put read write open close start stop next done'
).split(' ');

/** Lines of code-like text, `bytes` long, the same for the same seed (about four characters a token, as code). */
function lines(seed: string, bytes: number): string {
  const out: string[] = [];
  let length = 0;
  for (let i = 0; length < bytes; i++) {
    const digest = createHash('sha256').update(`${seed}/${i}`).digest();
    const words = Array.from(digest.subarray(0, 10), (b, j) =>
      j % 4 === 3 ? `${WORDS[b % WORDS.length]}${b}` : WORDS[b % WORDS.length],
    );
    const line = `${String(i + 1).padStart(4)}  ${words.join(' ')};`;
    out.push(line);
    length += line.length + 1;
  }
  return out.join('\n').slice(0, bytes);
}

/** The `work` tool's result for a step: its header (which the model reads), its marker, then its output. */
export function workResult(p: Position): string {
  const header = `step ${p.step} of ${p.of} (task ${p.task} of soak, run ${p.run})\nmarker ${markerOf(p.task, p.step)}`;
  const shape = resultShape(p.task, p.step);
  // A file read is the same file's text every time (one of twelve), as an agent reads the same sources again.
  const seed = shape.kind === 'file' ? `file-${shape.bytes}` : `${p.task}/${p.step}`;
  const title = shape.kind === 'file' ? `cat src/module${(shape.bytes - 3_000) / 450}.ts` : `$ run ${shape.kind}`;
  return `${header}\n${title}\n${lines(seed, shape.bytes)}`;
}
