/**
 * The handlers of the compaction commands: force one (or review its draft first), approve or discard a draft, read
 * the events, revert to before one. Input the workflow would refuse for its shape or size is refused here, before
 * anything is sent (exit 2); what depends on the agent's state (a draft that is not pending or stale, an event it
 * does not have) only the workflow can refuse (exit 1, "rejected").
 */
import { S3BlobStore, s3TargetFromEnv } from '../../storage/s3.ts';
import {
  agentState,
  approveDraft,
  compactAgent,
  discardDraft,
  requestCompaction,
  revertAgent,
} from '../../client/agents.ts';
import { compactionHistory } from '../../client/reads.ts';
import { STRATEGIES } from '../../engine/policy.ts';
import type { StrategyName } from '../../engine/policy.ts';
import { validateCompactInput, validateDraftInput } from '../../contract/input-checks.ts';
import type { CompactInput } from '../../contract/inputs.ts';
import { renderCompaction, renderDraft, renderEvents, renderRevert } from '../render.ts';
import { waitOptions, withClient } from './connection.ts';
import { EXIT, intFlag, readNamedFile, UsageError } from './parse.ts';
import type { Invocation } from './parse.ts';

export async function compact({ args, values, out }: Invocation): Promise<number> {
  const agentId = args.agent!;
  if (values.strategy !== undefined && !(STRATEGIES as readonly string[]).includes(values.strategy)) {
    throw new UsageError(`--strategy: ${JSON.stringify(values.strategy)} is not one of ${STRATEGIES.join(', ')}`);
  }
  const request: CompactInput = {
    ...(values.instructions ? { instructions: values.instructions } : {}),
    ...(values.strategy ? { strategy: values.strategy as StrategyName } : {}),
    ...(values['if-due'] ? { force: false } : {}),
    ...(values['even-if-larger'] ? { evenIfLarger: true } : {}),
  };
  if (values.review && (values['no-wait'] || values['if-due'])) {
    throw new UsageError('--review returns a draft to read: it cannot go with --no-wait or --if-due');
  }
  validateCompactInput(request); // what the workflow would refuse or drop is never sent
  if (values.review) {
    const { reviewed, pending } = await withClient(async (client) => {
      const pending = values.json ? undefined : (await agentState(client, agentId)).draft?.info.id; // it replaces
      return { reviewed: await compactAgent(client, agentId, { ...request, review: true }, waitOptions()), pending };
    });
    out(values.json ? JSON.stringify(reviewed, null, 2) : renderDraft(reviewed, agentId, pending));
    return EXIT.ok;
  }
  if (values['no-wait']) {
    await withClient((client) => requestCompaction(client, agentId, request));
    out(`compaction requested for ${agentId}`);
    return EXIT.ok;
  }
  const result = await withClient((client) => compactAgent(client, agentId, request, waitOptions()));
  out(values.json ? JSON.stringify(result, null, 2) : renderCompaction(result));
  return EXIT.ok;
}

export async function approve({ args, values, out }: Invocation): Promise<number> {
  const { agent: agentId, draft } = args as { agent: string; draft: string };
  const file = values['summary-file'];
  const summary = file === undefined ? undefined : readNamedFile('--summary-file', file);
  validateDraftInput({ draft, ...(summary !== undefined ? { summary } : {}) }); // a bad id or summary is never sent
  const result = await withClient((client) =>
    approveDraft(client, agentId, draft, { ...(summary !== undefined ? { summary } : {}), ...waitOptions() }),
  );
  out(values.json ? JSON.stringify(result, null, 2) : renderCompaction(result));
  return EXIT.ok;
}

export async function discard({ args, values, out }: Invocation): Promise<number> {
  const { agent: agentId, draft } = args as { agent: string; draft: string };
  validateDraftInput({ draft }); // a bad id is never sent
  const dropped = await withClient((client) => discardDraft(client, agentId, draft, waitOptions()));
  const paused =
    dropped.pausedUntil !== undefined
      ? `; automatic compaction paused until the context reaches ${dropped.pausedUntil} tokens`
      : '';
  out(values.json ? JSON.stringify(dropped) : `discarded ${dropped.discarded}${paused}`);
  return EXIT.ok;
}

export async function events({ args, values, settings, out }: Invocation): Promise<number> {
  const since = intFlag('since', values.since);
  const limit = intFlag('limit', values.limit);
  const store = new S3BlobStore(s3TargetFromEnv(settings));
  const { events, stats } = await withClient((client) =>
    compactionHistory(client, store, args.agent!, {
      ...(since !== undefined ? { since } : {}),
      ...(limit !== undefined ? { limit } : {}),
    }),
  );
  out(values.json ? JSON.stringify({ events, stats }, null, 2) : renderEvents(events, stats));
  return EXIT.ok;
}

export async function revert({ args, values, out }: Invocation): Promise<number> {
  const toEvent = intFlag('to-event', values['to-event'], 1)!; // required: the parser refused a line without it
  const result = await withClient((client) => revertAgent(client, args.agent!, { toEvent }, waitOptions()));
  out(values.json ? JSON.stringify(result, null, 2) : renderRevert(result));
  return EXIT.ok;
}
