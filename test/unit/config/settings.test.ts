import { describe, expect, it } from 'vitest';
import { DEFAULTS, loadSettings, SettingsError } from '../../../config/settings.ts';
import { versioningServer } from '../../../worker/worker.ts';

describe('settings', () => {
  it('defaults to the standard ports, bucket and task queue', () => {
    const settings = loadSettings({ HOME: '/home/u' });
    expect(settings.ports).toEqual({ temporal: 7233, temporalUi: 8233, minio: 9000, minioConsole: 9001 });
    expect(settings.bucket).toBe(DEFAULTS.bucket);
    expect(settings.taskQueue).toBe('longrun-agents');
    expect(settings.cacheDir).toBe('/home/u/.cache/longrun');
  });

  it('reads extra model headers as a JSON object', () => {
    expect(
      loadSettings({ LONGRUN_MODEL_HEADERS: '{"x-team":"agents","HTTP-Referer":"https://example.com"}' }).modelHeaders,
    ).toEqual({
      'x-team': 'agents',
      'HTTP-Referer': 'https://example.com',
    });
    expect(loadSettings({}).modelHeaders).toEqual({});
  });

  it('reads the workflow cache size (default 500) and the summary model window (none by default)', () => {
    expect(loadSettings({}).workflowCacheSize).toBe(500);
    expect(loadSettings({ LONGRUN_WORKFLOW_CACHE_SIZE: '2000' }).workflowCacheSize).toBe(2_000);
    expect(loadSettings({}).summaryWindow).toBeUndefined();
    expect(loadSettings({ LONGRUN_SUMMARY_WINDOW: '32768' }).summaryWindow).toBe(32_768);
  });

  it('reads the Worker Deployment (none by default) and refuses a name Temporal would misread', () => {
    expect(loadSettings({}).deployment).toBeUndefined();
    expect(loadSettings({ LONGRUN_DEPLOYMENT: 'agents-prod_2' }).deployment).toBe('agents-prod_2');
    expect(() => loadSettings({ LONGRUN_DEPLOYMENT: 'agents.prod' })).toThrow(
      'LONGRUN_DEPLOYMENT: must be 1 to 200 letters, digits, underscores or hyphens (got "agents.prod")',
    );
  });

  it('tells the servers that move a pinned run at continue-as-new (1.30 and later) from those that do not', () => {
    expect(versioningServer('1.29.1')).toBe(false);
    expect(versioningServer('1.30.0')).toBe(true);
    expect(versioningServer('1.32.1')).toBe(true);
    expect(versioningServer('2.0.0')).toBe(true);
    expect(versioningServer('')).toBeUndefined();
    expect(versioningServer('cloud')).toBeUndefined();
  });

  it("reads cluster mode's history shard count (default 4)", () => {
    expect(loadSettings({}).historyShards).toBe(4);
    expect(loadSettings({ LONGRUN_HISTORY_SHARDS: '16' }).historyShards).toBe(16);
  });

  it('honours XDG_CACHE_HOME and LONGRUN_CACHE_DIR', () => {
    expect(loadSettings({ HOME: '/h', XDG_CACHE_HOME: '/x' }).cacheDir).toBe('/x/longrun');
    expect(loadSettings({ HOME: '/h', LONGRUN_CACHE_DIR: '/c' }).cacheDir).toBe('/c');
  });

  it.each([
    ['LONGRUN_TEMPORAL_PORT', '70000', 'LONGRUN_TEMPORAL_PORT: must be an integer from 1 to 65535 (got "70000")'],
    ['LONGRUN_MINIO_PORT', 'abc', 'LONGRUN_MINIO_PORT: must be an integer from 1 to 65535 (got "abc")'],
    [
      'LONGRUN_S3_BUCKET',
      'My_Bucket',
      'LONGRUN_S3_BUCKET: must be 3 to 63 lowercase letters, digits, dots or hyphens (got "My_Bucket")',
    ],
    ['LONGRUN_S3_FORCE_PATH_STYLE', 'maybe', 'LONGRUN_S3_FORCE_PATH_STYLE: must be true or false (got "maybe")'],
    ['LONGRUN_MODEL_TIMEOUT_MS', '5', 'LONGRUN_MODEL_TIMEOUT_MS: must be an integer from 1000 to 3600000 (got "5")'],
    ['LONGRUN_MODEL_HEADERS', 'x-team: a', 'LONGRUN_MODEL_HEADERS: must be a JSON object of header names to strings'],
    ['LONGRUN_MODEL_HEADERS', '["a"]', 'LONGRUN_MODEL_HEADERS: must be a JSON object of header names to strings'],
    ['LONGRUN_MODEL_HEADERS', '{"bad header":"x"}', 'LONGRUN_MODEL_HEADERS: "bad header" is not a valid header name'],
    ['LONGRUN_MODEL_HEADERS', '{"x-n":1}', 'LONGRUN_MODEL_HEADERS: the value of x-n must be a string'],
    ['LONGRUN_WORKFLOW_CACHE_SIZE', '0', 'LONGRUN_WORKFLOW_CACHE_SIZE: must be an integer from 1 to 100000 (got "0")'],
    ['LONGRUN_HISTORY_SHARDS', '0', 'LONGRUN_HISTORY_SHARDS: must be an integer from 1 to 4096 (got "0")'],
    ['LONGRUN_SUMMARY_WINDOW', '8k', 'LONGRUN_SUMMARY_WINDOW: must be an integer from 1024 to 10000000 (got "8k")'],
  ])('%s=%s is an error naming the variable', (name, value, message) => {
    expect(() => loadSettings({ [name]: value })).toThrow(SettingsError);
    expect(() => loadSettings({ [name]: value })).toThrow(message);
  });
});
