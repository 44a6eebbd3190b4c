/** The compaction plans an agent's history scheduled, as the e2e tests of plans by reference read them. */
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { ContextRef, PlanOutcome } from '../../contract/compaction-activities.ts';

type Event = temporal.api.history.v1.IHistoryEvent;

/** A payload's JSON (the default data converter's). */
export const decoded = <T>(payload: temporal.api.common.v1.IPayload | undefined): T =>
  JSON.parse(Buffer.from(payload!.data!).toString('utf8')) as T;

/** The planCompaction inputs the agent's history scheduled, and what each answered. */
export function plansOf(events: Event[]): { contextRef?: ContextRef; outcome?: PlanOutcome }[] {
  const scheduled = new Map<string, { contextRef?: ContextRef; outcome?: PlanOutcome }>();
  for (const e of events) {
    const s = e.activityTaskScheduledEventAttributes;
    if (s?.activityType?.name === 'planCompaction') {
      scheduled.set(String(e.eventId), decoded<{ contextRef?: ContextRef }>(s.input?.payloads?.[0]));
    }
    const done = e.activityTaskCompletedEventAttributes;
    const plan = done && scheduled.get(String(done.scheduledEventId));
    if (plan) plan.outcome = decoded<PlanOutcome>(done.result?.payloads?.[0]);
  }
  return [...scheduled.values()];
}

/**
 * The events of every run of a workflow, oldest run first: from the run now current back through each run it
 * continued from (its first event names the run before it), so a continue-as-new between two reads loses nothing.
 */
export async function eventsOfAllRuns(client: Client, workflowId: string): Promise<Event[]> {
  const runs: Event[][] = [];
  let runId: string | undefined = undefined;
  for (;;) {
    const events: Event[] = (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
    runs.unshift(events);
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
    if (!runId) return runs.flat();
  }
}
