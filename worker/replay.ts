/**
 * `longrun replay FILE.jsonl`: runs a recorded session (OpenAI chat messages as JSONL, tool calls included) through
 * a real agent workflow, the recorded assistant messages standing in for the model and the recorded tool results
 * for the tools, under a chosen preset and window, and reports what compression did. Users tune their settings
 * with it before going live. Starts the embedded stack when TEMPORAL_ADDRESS is not set.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { ToolRegistry } from '../activities/tools.ts';
import { closeAgentAndWait, sendMessage, startAgent, storedCompressionEvents } from '../client/agents.ts';
import type { AgentState } from '../workflows/contract.ts';
import { loadSettings } from '../config/settings.ts';
import { loadTemporalTarget, localTemporalTarget } from '../config/temporal.ts';
import type { ChatMessage } from '../engine/messages.ts';
import { textOf } from '../engine/messages.ts';
import { countRequest, loadTokenCounter } from '../engine/tokens.ts';
import { pairViewOf, toolPairViolations } from '../engine/tool-pairs.ts';
import { startChatServer } from '../llm/chat-server.ts';
import type { ScriptedReply } from '../llm/chat-server.ts';
import { createOpenAI } from '../llm/openai.ts';
import { parseSessionJsonl, replyOf } from '../llm/replay.ts';
import { BINARIES } from '../stack/binaries.ts';
import { startEmbeddedStack } from '../stack/index.ts';
import type { EmbeddedStack } from '../stack/index.ts';
import { ensureBinaries } from '../stack/setup.ts';
import { S3BlobStore, s3TargetFromEnv } from '../storage/s3.ts';
import { compactionKey } from '../storage/keys.ts';
import { startInProcessAgents } from './in-process.ts';

export interface ReplayOptions {
  file: string;
  preset?: string;
  /** The model's window for this replay (default 128,000: gpt-4o-mini). */
  window?: number;
  log?: (line: string) => void;
}

export interface ReplayReport {
  file: string;
  preset: string;
  window: number;
  messages: number;
  turns: number;
  modelCalls: number;
  compressions: {
    seq: number;
    trigger: string;
    strategies: string[];
    tokensBefore: number;
    tokensAfter: number;
    summary: string | null;
    facts: { found: number; missing: number; pinned: string[] } | null;
    offloaded: { key: string; reloadIdentical: boolean }[];
  }[];
  toolPairViolations: number;
  maxRequestTokens: number;
  tokensSent: number;
  tokensSentWithoutCompression: number;
  historyBytes: number;
  continueAsNew: number;
  finalView: ChatMessage[];
}

/** The recording split into turns: each user message with the assistant and tool messages that follow it. */
function turnsOf(session: ChatMessage[]): { user: ChatMessage; replies: ChatMessage[] }[] {
  const turns: { user: ChatMessage; replies: ChatMessage[] }[] = [];
  for (const message of session) {
    if (message.role === 'user') turns.push({ user: message, replies: [] });
    else if (message.role === 'assistant') turns.at(-1)?.replies.push(message);
  }
  return turns;
}

export async function runReplay(options: ReplayOptions): Promise<ReplayReport> {
  const log = options.log ?? (() => {});
  const session = parseSessionJsonl(readFileSync(options.file, 'utf8'));
  const turns = turnsOf(session);
  if (turns.length === 0) throw new Error(`${options.file}: the recording has no user message`);
  const system = session.find((m) => m.role === 'system');
  const results = new Map(session.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id!, textOf(m.content)]));
  const window = options.window ?? 128_000;
  const preset = options.preset ?? 'default';

  // The recorded replies answer the agent, turn by turn; the recorded results answer its tool calls.
  let turn = 0;
  const model = await startChatServer((request): ScriptedReply => {
    const messages = request.body.messages;
    const lastUser = messages.findLastIndex((m) => m.role === 'user');
    const answered = messages.slice(lastUser + 1).filter((m) => m.role === 'assistant').length;
    const reply = turns[turn]?.replies[answered];
    if (!reply) return { content: '(the recording has no further reply in this turn)' };
    return replyOf(reply);
  });
  const tools = new ToolRegistry([], {
    fallback: (_args, context) => Promise.resolve(results.get(context.callId ?? '') ?? 'error: no recorded result'),
  });

  Runtime.install({ logger: new DefaultLogger('WARN') }); // the report is the output; the worker's INFO lines are noise
  const settings = loadSettings();
  let stack: EmbeddedStack | undefined;
  const external = Boolean(process.env.TEMPORAL_ADDRESS);
  if (!external) {
    log('[replay] starting the embedded stack (set TEMPORAL_ADDRESS to use a running server)');
    const binaries = await ensureBinaries(BINARIES, { cacheDir: settings.cacheDir });
    stack = await startEmbeddedStack({ mode: 'ephemeral', settings, binaries });
  }
  const temporal = stack?.temporal
    ? localTemporalTarget(stack.temporal.address, stack.temporal.namespace)
    : loadTemporalTarget();
  const store = new S3BlobStore(stack?.minio ? stack.minio.target : s3TargetFromEnv(settings));
  if (!stack?.minio) await store.ensureBucket();
  const agents = await startInProcessAgents({
    temporal,
    taskQueue: `replay-${randomUUID()}`,
    deps: { store, openai: createOpenAI({ apiKey: 'replay', baseURL: model.baseURL, timeoutMs: 30_000 }), tools },
  });
  const { client, taskQueue } = agents;
  try {
    const agentId = `replay-${randomUUID().slice(0, 8)}`;
    await startAgent(client, {
      agentId,
      model: 'gpt-4o-mini',
      ...(system?.content ? { systemPrompt: textOf(system.content) } : {}),
      taskQueue,
      modelOverride: { window },
      compression: { preset },
    });
    for (; turn < turns.length; turn++) {
      await sendMessage(client, agentId, textOf(turns[turn]!.user.content));
      if ((turn + 1) % 10 === 0) log(`[replay] ${turn + 1} of ${turns.length} turns`);
    }
    const state = await closeAgentAndWait(client, agentId);
    return await report(client, store, agentId, state, {
      options,
      window,
      preset,
      requests: model.requests.map((r) => r.body.messages),
      session,
      schemas: tools.schemas(),
    });
  } finally {
    await agents.close();
    await model.close();
    await stack?.stop();
  }
}

async function report(
  client: Client,
  store: S3BlobStore,
  agentId: string,
  state: AgentState,
  run: {
    options: ReplayOptions;
    window: number;
    preset: string;
    requests: ChatMessage[][];
    session: ChatMessage[];
    schemas: unknown[];
  },
): Promise<ReplayReport> {
  const counter = await loadTokenCounter(state.modelInfo!.encoding);
  const tokensOf = (messages: ChatMessage[]) => countRequest(counter, messages, run.schemas, state.modelInfo!.margin);
  const requestTokens = run.requests.map(tokensOf);
  // Without compression, each request would have carried the whole recording up to its last message (found by
  // walking the recording forward, so that repeated texts match in order).
  const same = (a: ChatMessage, b: ChatMessage) =>
    a.role === b.role && (a.content ?? '') === (b.content ?? '') && (a.tool_call_id ?? '') === (b.tool_call_id ?? '');
  let position = 0;
  const withoutCompression = run.requests.map((request) => {
    const last = request.at(-1)!;
    const at = run.session.findIndex((m, i) => i >= position && same(m, last));
    if (at !== -1) position = at;
    const system = request[0]?.role === 'system' && run.session[0]?.role !== 'system' ? [request[0]] : [];
    return tokensOf([...system, ...run.session.slice(0, position + 1)]);
  });
  const events = await storedCompressionEvents(
    store,
    state,
    Array.from({ length: state.compressions ?? 0 }, (_, i) => i + 1),
  );
  const compressions = await Promise.all(
    events.map(async (event) => {
      const lines = ((await store.get(event.keys.removed)) ?? '').split('\n').filter(Boolean);
      const offloaded = await Promise.all(
        lines.map(async (line) => {
          const item = JSON.parse(line) as { key: string; message: ChatMessage };
          return { key: item.key, reloadIdentical: (await store.get(item.key)) === JSON.stringify(item.message) };
        }),
      );
      const summaryBody = event.summaryTokens
        ? await store.get(compactionKey(state, event.seq, 'summary.json'))
        : undefined;
      return {
        seq: event.seq,
        trigger: event.trigger,
        strategies: event.strategies as string[],
        tokensBefore: event.tokensBefore,
        tokensAfter: event.tokensAfter,
        summary: summaryBody ? textOf((JSON.parse(summaryBody) as ChatMessage).content) : null,
        facts: event.facts
          ? { found: event.facts.found, missing: event.facts.missing, pinned: event.facts.pinned }
          : null,
        offloaded,
      };
    }),
  );
  // History of every run of the workflow, summed.
  let historyBytes = 0;
  let runs = 0;
  for await (const execution of client.workflow.list({ query: `WorkflowId = "agent-${agentId}"` })) {
    const description = await client.workflow.getHandle(execution.workflowId, execution.runId).describe();
    historyBytes += description.historySize ?? 0;
    runs++;
  }
  return {
    file: run.options.file,
    preset: run.preset,
    window: run.window,
    messages: run.session.length,
    turns: state.turns,
    modelCalls: run.requests.length,
    compressions,
    toolPairViolations: run.requests.reduce((n, r) => n + toolPairViolations(r.map(pairViewOf)).length, 0),
    maxRequestTokens: Math.max(0, ...requestTokens),
    tokensSent: requestTokens.reduce((a, b) => a + b, 0),
    tokensSentWithoutCompression: withoutCompression.reduce((a, b) => a + b, 0),
    historyBytes,
    continueAsNew: Math.max(0, runs - 1),
    finalView: run.requests.at(-1) ?? [],
  };
}

/** The report as a few readable lines. */
export function renderReplay(r: ReplayReport): string {
  const lines = [
    `${r.file}: ${r.messages} messages, ${r.turns} turns, ${r.modelCalls} model calls (preset ${r.preset}, window ${r.window})`,
    `largest request ${r.maxRequestTokens} tokens of ${r.window}; tokens sent ${r.tokensSent} vs ${r.tokensSentWithoutCompression} without compression`,
    `tool-pair violations: ${r.toolPairViolations}; history ${r.historyBytes} bytes over ${r.continueAsNew + 1} run(s)`,
  ];
  for (const c of r.compressions) {
    const reloads = c.offloaded.filter((o) => o.reloadIdentical).length;
    lines.push(
      `compression ${c.seq} (${c.trigger}): ${c.tokensBefore} → ${c.tokensAfter} tokens; ${c.strategies.join(', ')}; ` +
        `${c.offloaded.length} removed, ${reloads} reload byte-identical` +
        (c.facts ? `; facts found ${c.facts.found}, missing ${c.facts.missing}, pinned ${c.facts.pinned.length}` : ''),
    );
  }
  if (r.compressions.length === 0) lines.push('no compression (the session fits the window under this preset)');
  return lines.join('\n');
}
