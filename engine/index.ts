/**
 * `longrun/engine`: the pure compaction engine (no I/O, no Temporal): policies and presets, the planner, token
 * counting and the model-window registry, over chat messages in the OpenAI shape.
 */
export { PRESET_NAMES, PRESETS, resolvePolicy } from './presets.ts';
export { PolicyError, STRATEGIES } from './policy.ts';
export { mergePolicy } from './policy-merge.ts';
export { validatePolicy } from './policy-validation.ts';
export type { CompactionPolicy, PolicyOverrides, StrategyName } from './policy.ts';
export { planCompaction } from './planner/index.ts';
export type { Operation, Plan, PlanInput, PlanStep } from './planner/index.ts';
export { gateOf, triggerTokens } from './gates.ts';
export type { Gate } from './trigger.ts';
export { countMessage, countRequest, countToolSchemas, loadTokenCounter } from './tokens.ts';
export type { EncodingName, TokenCounter } from './tokens.ts';
export { resolveModelInfo, UnknownModelError } from './models.ts';
export type { ModelInfo, ModelOverride } from './models.ts';
export { textOf } from './messages.ts';
export type { ChatMessage, ContentPart, MessageContent, MessageMeta, ToolCall } from './messages.ts';
export { pairViewOf, toolPairViolations } from './tool-pairs.ts';
