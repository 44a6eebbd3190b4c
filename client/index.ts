/**
 * `longrun/client`: start agents, talk to them, force and read their compactions, from any Node process. It loads no
 * worker runtime.
 */
export {
  AgentClosedError,
  agentHandle,
  agentState,
  approveDraft,
  closeAgent,
  closeAgentAndWait,
  compactAgent,
  configureAgent,
  discardDraft,
  InvalidAgentIdError,
  queueMessage,
  requestCompaction,
  revertAgent,
  sendMessage,
  startAgent,
} from './agents.ts';
export type { StartAgentOptions } from './agents.ts';
export { reopenAgent } from './agent-reopen.ts';
export type { StoredLister } from './agent-reopen.ts';
export { AgentSettingsDifferError } from './setting-differences.ts';
export type { SettingDifference } from './setting-differences.ts';
export { approveTool, awaitingApproval, denyTool, interruptAgent, steerAgent } from './control.ts';
export type { ControlOptions } from './control.ts';
export { agentPins, pinMessage, pinText, unpin } from './pins.ts';
export type { Pin, PinResult, UnpinResult } from '../contract/pins.ts';
export {
  agentContext,
  agentLedger,
  agentProgress,
  compactionEvents,
  compactionHistory,
  compactionStats,
  listAgents,
  storedCompactionEvents,
} from './reads.ts';
export type { AgentSummary, StoredReader } from './reads.ts';
export { AgentNotAnsweringError } from './agent-reads.ts';
export { streamAgent, streamLife, streamOffset, STREAM_POLL_MS } from './stream.ts';
export type { StreamAgentOptions, StreamedItem, StreamStore } from './stream.ts';
export { searchAgent, SEARCH_LIMITS } from './search.ts';
export type { SearchAgentOptions, SearchMatch, SearchStore } from './search.ts';
export { SupersededCalls } from '../contract/stream.ts';
export type { PublishStreamInput, StreamItem, StreamItemBody, StreamItemKind } from '../contract/stream.ts';
export type { AgentSnapshot } from './agent-reads.ts';
export { retriedActivities, taskQueuePolled } from './agent-observation.ts';
export type { RetriedActivity, TaskQueuePolling } from './agent-observation.ts';
export {
  AgentUpdateError,
  NoWorkerError,
  TemporalUnreachableError,
  UpdateOutcomeUnknownError,
} from './update-errors.ts';
export { updateStage } from './updates.ts';
export type { UpdateStage, UpdateWaitOptions } from './updates.ts';
export { InvalidInputError } from '../contract/inputs.ts';
export type {
  AgentInput,
  ApproveInput,
  CompactInput,
  ConfigureInput,
  InterruptInput,
  RevertInput,
  SteerInput,
  ToolApprovalSettings,
  ToolDecisionInput,
  TurnBudget,
  TurnStop,
} from '../contract/inputs.ts';
export type { AgentProgress, ApprovalProgress, CompactionProgress, TurnProgress } from '../contract/progress.ts';
export { describeApproval } from '../contract/progress.ts';
export type { AgentState } from '../contract/state.ts';
export type {
  CompactResult,
  CompactionEvent,
  CompactionEventSummary,
  CompactionStats,
  ConfigureResult,
  DiscardResult,
  Draft,
  InterruptResult,
  RevertResult,
  SendResult,
  SettingChange,
  SteerResult,
  ToolDecisionResult,
} from '../contract/results.ts';
export { interruptedReply } from '../contract/results.ts';
export type { MessageRecord } from '../contract/records.ts';
export { loadSettings } from '../config/settings.ts';
export { connectClient, loadTemporalTarget, TemporalNotAnsweringError } from '../config/temporal.ts';
export type { TemporalTarget } from '../config/temporal.ts';
export { S3BlobStore, s3TargetFromEnv } from '../storage/s3.ts';
