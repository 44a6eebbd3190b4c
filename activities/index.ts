/**
 * Activities: the agent's I/O. They take references (agent id, message ids, storage keys), never whole
 * transcripts, so the workflow history grows with each turn's new content only.
 *
 * Built by {@link createActivities} with their dependencies, so the worker, the tests and the demo wire real
 * clients the same way. It composes one factory a role, each in its own file: the compaction steps, their phases
 * published (compaction-phases.ts, compaction/); what the workflow reports (workflow-reports.ts); the messages,
 * pins and replies stored or read (messages.ts); the model described (describe-model.ts); the model call
 * (call-model.ts, which asks model-answer.ts and model-request.ts); tool calls (run-tool.ts); a delegated task's
 * report (delegation.ts). The activities' names are what recorded workflow histories schedule: they do not change.
 */
import type OpenAI from 'openai';
import type { BlobStore } from '../storage/s3.ts';
import { createModelCall } from './call-model.ts';
import { createPhasedCompaction } from './compaction-phases.ts';
import { createReportDelegation } from './delegation.ts';
import { createModelDescription } from './describe-model.ts';
import { createMessageActivities, createMessageStore } from './messages.ts';
import { createToolRunner } from './run-tool.ts';
import { createSearchWrites } from './search-writes.ts';
import { createAgentStream } from './stream.ts';
import type { AgentStream } from './stream.ts';
import { ToolRegistry } from './tools.ts';
import { createWorkflowReports } from './workflow-reports.ts';

export { modelFailure } from './model-errors.ts';

export interface ActivityDeps {
  store: BlobStore;
  openai: OpenAI;
  tools?: ToolRegistry;
  /** The model that writes summaries (usually cheaper than the agent's); without one, summaries are extractive. */
  summaryModel?: string;
  /** The summary model's window, when the registry does not know it (default 128,000). */
  summaryWindow?: number;
  /** A break of the coverage invariant fails the turn or compaction instead of being recorded (tests). */
  strictInvariants?: boolean;
  /**
   * Call the agent's model with `stream: true` and publish its output to the live stream as it arrives (default
   * true). False: every call waits for the whole reply (a provider that streams badly); a provider that answers a
   * streamed request with a 400 about streaming is called without streaming anyway (docs/streaming.md).
   */
  streamModel?: boolean;
}

export type { Counting } from '../engine/models.ts';

export function createActivities({
  store,
  openai,
  tools = new ToolRegistry(),
  summaryModel,
  summaryWindow,
  strictInvariants = false,
  streamModel = true,
}: ActivityDeps) {
  /** The conversation's messages, stored under their idempotent keys and counted (activities/messages.ts). */
  const messages = createMessageStore(store);
  const { save } = messages;
  /** The agent's search index, written as bodies are stored (activities/search-writes.ts). */
  const search = createSearchWrites(store);
  /** The agents' live streams (docs/streaming.md); runTool publishes its call and result with `stream.toolCall/Result`. */
  const stream: AgentStream = createAgentStream(store);
  /** Tool calls: the `runTool` activity, and a reply's plain calls run in the model call (activities/run-tool.ts). */
  const runner = createToolRunner({ tools, store, save, stream, search });
  const compactionDeps = {
    store,
    search,
    openai,
    tools,
    ...(summaryModel ? { summaryModel } : {}),
    ...(summaryWindow ? { summaryWindow } : {}),
    strictInvariants,
  };
  return {
    ...createPhasedCompaction(compactionDeps, stream),
    ...createWorkflowReports({ stream, strictInvariants }),
    ...createMessageActivities({ ...messages, search, stream }),
    ...createModelDescription(tools),
    ...createModelCall({ ...messages, store, openai, tools, search, stream, streamModel, runner }),
    /**
     * Runs one tool call and stores its result as a tool message (activities/run-tool.ts): heartbeating, at least
     * once, cancellable by an interrupt, and asking for approval first when the tool's rule says so.
     */
    runTool: runner.runTool,
    reportDelegation: createReportDelegation({ store, save, search, stream }),
  };
}
