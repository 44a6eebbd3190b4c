/**
 * One answer to "where is Temporal" (config/addresses.ts), across processes: the CLI follows LONGRUN_TEMPORAL_PORT
 * and LONGRUN_MINIO_PORT as the main job does, and a server that does not answer is said at once, naming the
 * variable that pointed there, never with a transport library's text.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../stack/ports.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { runLongrun, STACK_TRACE } from '../support/longrun-cli.ts';
import { onCluster } from '../support/stack-kind.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness(() => ({ content: 'noted' }));
});
afterAll(async () => {
  await h?.close();
});

/** The environment of a second shell: no TEMPORAL_* or AWS_* pointing anywhere, only what `extra` sets. */
function shellEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LONGRUN_TASK_QUEUE: h.taskQueue, ...extra };
  for (const name of ['TEMPORAL_ADDRESS', 'TEMPORAL_PROFILE', 'TEMPORAL_CONFIG_FILE', 'AWS_ENDPOINT_URL_S3']) {
    if (!(name in extra)) delete env[name];
  }
  delete env.AWS_ENDPOINT_URL;
  return env;
}

const portOf = (url: string) => new URL(url.includes('://') ? url : `grpc://${url}`).port;

describe('where Temporal is, for the CLI', () => {
  // The embedded stack's MinIO takes the local-only credentials LONGRUN_MINIO_PORT goes with (cluster mode's too,
  // but its Temporal has no LONGRUN_TEMPORAL_PORT of the test's choosing).
  it.skipIf(onCluster)(
    'with LONGRUN_TEMPORAL_PORT and LONGRUN_MINIO_PORT exported as for npm start, the CLI reaches that stack',
    async () => {
      const stack = inject('stack');
      const env = shellEnv({
        LONGRUN_TEMPORAL_PORT: portOf(stack.temporalAddress),
        LONGRUN_MINIO_PORT: portOf(stack.s3.endpoint!),
        LONGRUN_S3_BUCKET: stack.s3.bucket,
        TEMPORAL_NAMESPACE: stack.namespace,
      });
      const agentId = newAgentId('port');
      expect(await runLongrun(['start', agentId], { env })).toMatchObject({ code: 0 });
      const sent = await runLongrun(['send', agentId, 'hello'], { env });
      expect(sent, sent.stderr).toMatchObject({ code: 0, stdout: 'noted\n' });
      // A forced compaction, then its events: read from Temporal, then in full from MinIO.
      expect((await runLongrun(['compact', agentId, '--strategy', 'truncate-rounds'], { env })).code).toBe(0);
      const events = await runLongrun(['events', agentId, '--json'], { env });
      expect(events.code, events.stderr).toBe(0);
      expect(JSON.parse(events.stdout)).toHaveProperty('stats');
    },
  );

  it('TEMPORAL_ADDRESS at a port nothing listens on: exit 1 at once, naming the variable and what to do', async () => {
    const dead = `127.0.0.1:${await freePort()}`;
    const run = await runLongrun(['state', newAgentId('dead')], { env: shellEnv({ TEMPORAL_ADDRESS: dead }) });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `longrun: Temporal at TEMPORAL_ADDRESS=${dead} (from the environment) does not answer`,
    );
    expect(run.stderr).toContain('start the server it names or correct TEMPORAL_ADDRESS');
    expect(run.stderr).not.toMatch(/tonic|transport::Error/);
    expect(run.stderr).not.toMatch(STACK_TRACE);
    expect(run.ms).toBeLessThan(3_000);
  });

  it('LONGRUN_TEMPORAL_PORT at a port nothing listens on: the message names it', async () => {
    const port = String(await freePort());
    const run = await runLongrun(['list'], { env: shellEnv({ LONGRUN_TEMPORAL_PORT: port }) });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `longrun: Temporal at 127.0.0.1:${port} (LONGRUN_TEMPORAL_PORT=${port}, where \`npm start\` runs its Temporal) ` +
        'does not answer',
    );
    expect(run.ms).toBeLessThan(3_000);
  });

  it('LONGRUN_MINIO_PORT at a port nothing listens on: the S3 read says so, naming it', async () => {
    const port = String(await freePort());
    const agentId = newAgentId('s3');
    const env = shellEnv({
      TEMPORAL_ADDRESS: h.temporal.connectionOptions.address,
      TEMPORAL_NAMESPACE: h.temporal.namespace,
      LONGRUN_MINIO_PORT: port,
    });
    const run = await runLongrun(['reload', agentId, `agents/${agentId}/x/messages/m000001.json`], { env });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `longrun: S3 at http://127.0.0.1:${port} (LONGRUN_MINIO_PORT=${port}, where \`npm start\` runs its MinIO) does ` +
        'not answer (connect ECONNREFUSED',
    );
    expect(run.stderr).not.toMatch(STACK_TRACE);
  });
});
