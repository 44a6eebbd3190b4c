/**
 * `longrun rollout`: once a release's workers run, every living agent is asked to hand over to a new run, which
 * begins on the release's code (client/rollout.ts); it says how far it got until none is left on a run of before.
 */
import { rollOut } from '../../client/rollout.ts';
import type { RolloutProgress } from '../../client/rollout.ts';
import { withClient } from './connection.ts';
import { CliExit, EXIT, UsageError } from './parse.ts';
import type { Invocation } from './parse.ts';

/** How long `rollout` waits for the last agents (a tool call waiting for approval holds its agent). */
export const ROLLOUT_TIMEOUT_MS = 10 * 60_000;

export async function rollout({ values, out }: Invocation): Promise<number> {
  const taskQueue = values['task-queue'];
  const before = values.before !== undefined ? timeFlag('before', values.before) : undefined;
  let said = '';
  const report = await withClient((client) =>
    rollOut(client, {
      ...(taskQueue !== undefined ? { taskQueue } : {}),
      ...(before !== undefined ? { since: before } : {}),
      timeoutMs: values['no-wait'] ? 0 : ROLLOUT_TIMEOUT_MS,
      onProgress: (progress) => {
        const line = progressLine(progress);
        if (line !== said && !values.json) console.error(line);
        said = line;
      },
    }),
  );
  if (values.json) out(JSON.stringify(report, null, 2));
  else out(summary(report, values['no-wait']));
  if (report.waiting.length > 0 && !values['no-wait']) {
    throw new CliExit(EXIT.error, `${report.waiting.length} agents are still on runs of before the rollout`);
  }
  return EXIT.ok;
}

/** A time flag's value: an ISO 8601 time with its date (a time zone or Z, else the local time), or a usage error. */
function timeFlag(name: string, raw: string): Date {
  const time = /^\d{4}-\d\d-\d\d/.test(raw) ? new Date(raw) : new Date(Number.NaN);
  if (Number.isNaN(time.getTime())) {
    throw new UsageError(`--${name}: must be an ISO 8601 time like 2026-11-29T06:00:00Z (got ${JSON.stringify(raw)})`);
  }
  return time;
}

function progressLine(progress: RolloutProgress): string {
  const head = `renewed ${progress.renewed} of ${progress.asked} agents`;
  const first = progress.waiting[0];
  return first ? `${head}; waiting for ${progress.waiting.length}, ${first.agentId}: ${first.why}` : head;
}

function summary(report: RolloutProgress, noWait: boolean): string {
  const since = report.since.toISOString();
  if (report.asked === 0) return `no agent is on a run that began before ${since}: nothing to renew`;
  if (noWait) return `asked ${report.asked} agents on runs of before ${since} to renew (not waiting)`;
  const lines = [`renewed ${report.renewed} of ${report.asked} agents on runs of before ${since}`];
  for (const waiting of report.waiting) lines.push(`  ${waiting.agentId}: ${waiting.why}`);
  return lines.join('\n');
}
