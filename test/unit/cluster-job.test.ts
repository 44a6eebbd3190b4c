/** `longrun up --cluster`'s worker processes: their environment. */
import { describe, expect, it } from 'vitest';
import { clusterWorkerEnv, workerMetricsAddress } from '../../commands/cluster-job.ts';

describe("the cluster job's workers", () => {
  it("point at the cluster's servers and keep the rest of the environment", () => {
    const env = clusterWorkerEnv(
      { OPENAI_API_KEY: 'k', TEMPORAL_ADDRESS: 'elsewhere:7233', LONGRUN_MODEL: 'm' },
      { TEMPORAL_ADDRESS: '127.0.0.1:7233', AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:9000' },
      1,
    );
    expect(env).toEqual({
      OPENAI_API_KEY: 'k',
      LONGRUN_MODEL: 'm',
      TEMPORAL_ADDRESS: '127.0.0.1:7233',
      AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:9000',
    });
  });

  it('serve their metrics each on its own port: the one named, then the next', () => {
    const env = { LONGRUN_METRICS_ADDRESS: '127.0.0.1:9464' };
    expect(clusterWorkerEnv(env, {}, 1).LONGRUN_METRICS_ADDRESS).toBe('127.0.0.1:9464');
    expect(clusterWorkerEnv(env, {}, 2).LONGRUN_METRICS_ADDRESS).toBe('127.0.0.1:9465');
    expect(workerMetricsAddress('[::1]:9000', 2)).toBe('[::1]:9001');
    expect(() => workerMetricsAddress('127.0.0.1:65535', 2)).toThrow(
      'LONGRUN_METRICS_ADDRESS: cluster mode serves each of its 2 workers',
    );
  });
});
