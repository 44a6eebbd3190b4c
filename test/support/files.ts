/**
 * The repository a coding agent reads in the long-loop tests: `src/module_<n>.ts`, a few hundred to about 1,700
 * tokens each, with one error line to keep; and the `read_file` tool that serves it.
 */
import { defineTool } from '../../activities/tools.ts';
import type { ChatMessage } from '../../engine/messages.ts';

export function fileOf(n: number): string {
  const lines = Array.from(
    { length: 20 + ((n * 37) % 90) },
    (_, i) => `  const value${i} = compute(${n}, ${i}); // step ${n}`,
  );
  return [
    `// src/module_${n}.ts`,
    ...lines,
    `ERROR src/module_${n}.ts:${n + 10}: TypeError: value${n} is undefined`,
  ].join('\n');
}

export const readFile = defineTool({
  name: 'read_file',
  description: 'Read a file of the repository',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  run: (args) => Promise.resolve(fileOf(Number(/module_(\d+)/.exec(String(args.path))?.[1] ?? 0))),
});

/** The step the agent is at: one more than the tool call the request's newest step answers (always kept). */
export function stepOf(messages: ChatMessage[]): number {
  const last = messages.at(-1)!;
  if (last.role !== 'tool') return 1;
  return Number(/^call_(\d+)$/.exec(last.tool_call_id ?? '')?.[1] ?? 0) + 1;
}

/** The model's next step in the loop over `steps` modules: read the next one, or answer once all are read. */
export function nextStep(messages: ChatMessage[], steps: number) {
  const step = stepOf(messages);
  if (step > steps) return { content: `All ${steps} modules read; the fix is the same in each.` };
  return readStep(step);
}

/** Step `step` of the loop: a call of `read_file` for `src/module_<step>.ts`, with the call id `call_<step>`. */
export function readStep(step: number) {
  return {
    content: null,
    toolCalls: [
      {
        id: `call_${step}`,
        type: 'function' as const,
        function: { name: 'read_file', arguments: JSON.stringify({ path: `src/module_${step}.ts` }) },
      },
    ],
  };
}
