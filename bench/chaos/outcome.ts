/**
 * What a chaos run reads back once its agents are done: every key under a prefix, and each agent's outcome (its
 * transcript, context, compaction events and workflow runs) as the invariants (invariants.ts) take it.
 */
import type { Client } from '@temporalio/client';
import { agentWorkflowId } from '../../contract/agent.ts';
import { lifePrefix } from '../../contract/keys.ts';
import type { CompactionEvent } from '../../contract/results.ts';
import type { AgentState } from '../../contract/state.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import type { S3BlobStore } from '../../storage/s3.ts';
import type { AgentOutcome } from './invariants.ts';

/** `work` over `items`, at most `width` at once, results in order (a long life has tens of thousands of objects). */
export async function inBatches<T, R>(items: readonly T[], work: (item: T) => Promise<R>, width = 32): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += width) out.push(...(await Promise.all(items.slice(i, i + width).map(work))));
  return out;
}

/** Every key under `prefix` (S3 lists a thousand at a time). */
export async function listAll(store: S3BlobStore, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for (;;) {
    const page = await store.list(prefix, { ...(keys.length ? { startAfter: keys.at(-1)! } : {}), limit: 1_000 });
    keys.push(...page);
    if (page.length < 1_000) return keys;
  }
}

/** What an agent left: its transcript, context, events and runs. */
export async function outcomeOf(
  client: Client,
  store: S3BlobStore,
  name: string,
  script: string[],
  final: AgentState,
): Promise<AgentOutcome> {
  const prefix = lifePrefix(final);
  const keys = await listAll(store, prefix);
  const load = async <T>(key: string) => JSON.parse((await store.get(key))!) as T;
  const messageKeys = keys.filter((k) => k.startsWith(`${prefix}messages/`)).sort();
  const transcript = await inBatches(messageKeys, async (key) => ({
    id: key.slice(key.lastIndexOf('/') + 1, -'.json'.length),
    message: await load<ChatMessage>(key),
  }));
  const eventKeys = keys.filter((k) => k.endsWith('/event.json')).sort();
  const events = await inBatches(eventKeys, async (key) => {
    const event = await load<CompactionEvent>(key);
    const removedText = (await store.get(event.keys.removed)) ?? '';
    const removed = removedText
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { id: string; replacedBy?: string });
    return {
      seq: event.seq,
      trigger: event.trigger,
      strategies: [...event.strategies],
      tokensBefore: event.tokensBefore,
      tokensAfter: event.tokensAfter,
      removed: removed.map(({ id, replacedBy }) => ({ id, ...(replacedBy ? { replacedBy } : {}) })),
    };
  });
  const runs: AgentOutcome['runs'] = [];
  for await (const run of client.workflow.list({ query: `WorkflowId = "${agentWorkflowId(final.agentId)}"` })) {
    const history = await client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
    runs.push({
      status: run.status.name,
      workflowTaskFailures: (history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes).length,
    });
  }
  return {
    name,
    script,
    transcript,
    context: final.messages.map(({ id, key, ref, kind, steer }) => ({
      id,
      key,
      ...(ref ? { ref } : {}),
      ...(kind ? { kind } : {}),
      ...(steer ? { steer } : {}),
    })),
    ...(final.base ? { base: final.base } : {}),
    events,
    stateEvents: (final.events ?? []).map(({ seq, tokensAfter }) => ({ seq, tokensAfter })),
    stateCompactions: final.compactions ?? 0,
    runs,
  };
}
