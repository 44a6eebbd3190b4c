/** The offline tool loop's recording says what the tool says: every recorded result is the tool's own output. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { TRAIL_STAGES, trailReportTool } from '../../activities/demo-tool.ts';
import { ToolInputError } from '../../activities/tools.ts';
import { DEMO_TOOL_SESSION } from '../../llm/endpoint.ts';
import { parseSessionJsonl } from '../../llm/replayed-model.ts';
import { textOf } from '../../engine/messages.ts';

const context = { agentId: 'a', callId: 'c' } as never;

describe('trail_report and demo/trail-session.jsonl', () => {
  it('each recorded call has the tool’s own result; the recorded answer names exactly the stages that need care', async () => {
    const session = parseSessionJsonl(readFileSync(DEMO_TOOL_SESSION, 'utf8'));
    const tool = trailReportTool();
    const calls = session.flatMap((m) => m.tool_calls ?? []);
    expect(calls).toHaveLength(TRAIL_STAGES.length);
    for (const call of calls) {
      const result = session.find((m) => m.role === 'tool' && m.tool_call_id === call.id);
      const args = JSON.parse(call.function.arguments) as Record<string, unknown>;
      expect(result?.content).toBe(await tool.run(args, context));
    }
    const answer = textOf(session.at(-1)!.content);
    TRAIL_STAGES.forEach((stage, i) => {
      if (stage.care) expect(answer).toContain(`stage ${i + 1} (`);
      else expect(answer).not.toContain(`stage ${i + 1} (`);
    });
  });

  it('refuses a stage out of range, naming the range', async () => {
    await expect(trailReportTool().run({ stage: 13 }, context)).rejects.toThrow(
      new ToolInputError('stage must be an integer from 1 to 12'),
    );
  });
});
