/**
 * The `describeModel` activity: what the workflow knows of the agent's model before its first call (its window and
 * counting, the compaction policy resolved, the gate) and the tokens every request spends besides the messages.
 */
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE } from '../contract/failures.ts';
import type { DescribeModelInput, ModelDescription } from '../contract/activities.ts';
import { gateOf } from '../engine/gates.ts';
import { resolveModelInfo } from '../engine/models.ts';
import type { ModelInfo } from '../engine/models.ts';
import type { CompactionPolicy } from '../engine/policy.ts';
import { resolvePolicy } from '../engine/presets.ts';
import { CHAT_OVERHEAD, countToolSchemas, loadTokenCounter } from '../engine/tokens.ts';
import type { ToolRegistry } from './tools.ts';

/** The activity describeModel over the worker's `tools` (their schemas count in every request). */
export function createModelDescription(tools: ToolRegistry) {
  return {
    /**
     * The model's window and counting (the registry, with the agent's overrides), and the tokens every request
     * spends besides the messages. An unknown model fails the agent at its start with a clear error.
     */
    async describeModel({
      model,
      override,
      tools: selection,
      ...named
    }: DescribeModelInput): Promise<ModelDescription> {
      const compaction = named.compaction ?? named.compression; // (scheduled before the rename: its former name)
      let info: ModelInfo;
      let policy: CompactionPolicy;
      try {
        info = resolveModelInfo(model, override);
        policy = resolvePolicy(compaction);
      } catch (error) {
        throw ApplicationFailure.nonRetryable((error as Error).message, FAILURE.badConfiguration, error);
      }
      const counter = await loadTokenCounter(info.encoding);
      const fixedTokens = CHAT_OVERHEAD.replyPrimer + countToolSchemas(counter, tools.schemas(selection), info.margin);
      return { info, fixedTokens, policy, gate: gateOf(policy, info.window) };
    },
  };
}
