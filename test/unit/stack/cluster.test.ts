/** Cluster mode's pure parts: the dynamic config on top of the shared one, the UI's command line, checks. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { SEARCH_ATTRIBUTE_TYPES } from '../../../contract/search-attributes.ts';
import { MAX_MEMBERSHIP_PORT } from '../../../stack/cluster.ts';
import {
  DYNAMIC_CONFIG_FILE,
  dynamicConfigWith,
  shardMismatch,
  UI_BASE_CONFIG,
  uiServerArgs,
  uiServerEnv,
} from '../../../stack/cluster-config.ts';
import { queryNaming } from '../../../stack/cluster-servers.ts';
import { freePortsBetween } from '../../../stack/ports.ts';
import { DEFAULT_DYNAMIC_CONFIG } from '../../../stack/temporal.ts';

const values = (text: string) =>
  Object.fromEntries(
    Object.entries(parse(text) as Record<string, { value: unknown }[]>).map(([key, entries]) => [key, entries]),
  );

describe('the dynamic config on top of the shared file', () => {
  const shared = readFileSync(DYNAMIC_CONFIG_FILE, 'utf8');

  it('keeps every shared value and adds the overrides, each a value without constraints', () => {
    const text = dynamicConfigWith(shared, { 'limit.historyCount.suggestContinueAsNew': 40 });
    expect(values(text)).toEqual({
      ...Object.fromEntries(Object.entries(DEFAULT_DYNAMIC_CONFIG).map(([key, value]) => [key, [{ value }]])),
      'limit.historyCount.suggestContinueAsNew': [{ value: 40 }],
    });
    expect(text.split('\n')[0]).toContain(DYNAMIC_CONFIG_FILE);
  });

  it('replaces an entry of the shared file rather than repeating its key (which the server would refuse)', () => {
    const text = dynamicConfigWith(shared, { 'history.transferProcessorMaxPollRPS': 50, 'a.string': 'x: y' });
    expect(text.match(/^history\.transferProcessorMaxPollRPS:/gm)).toHaveLength(1);
    expect(values(text)).toMatchObject({
      'history.transferProcessorMaxPollRPS': [{ value: 50 }],
      'system.enableActivityEagerExecution': [{ value: true }],
      'a.string': [{ value: 'x: y' }],
    });
  });

  it('an entry spanning several lines is removed whole, a top-level comment after it kept', () => {
    const text = dynamicConfigWith(
      'a.b:\n  - value: 1\n    constraints:\n      namespace: x\n# about c\nc.d:\n  - value: 2\n',
      { 'a.b': 3 },
    );
    expect(values(text)).toEqual({ 'c.d': [{ value: 2 }], 'a.b': [{ value: 3 }] });
    expect(text).toContain('# about c');
  });
});

describe('the Temporal UI server', () => {
  it("runs the image's configuration with the variables compose sets, on loopback", () => {
    expect(uiServerArgs('/data/ui')).toEqual(['--root', '/data/ui', '--config', 'config', '--env', 'docker', 'start']);
    expect(
      uiServerEnv({ temporalAddress: '127.0.0.1:7233', port: 8233, namespace: 'default', codecEndpoint: 'http://c' }),
    ).toEqual({
      TEMPORAL_ADDRESS: '127.0.0.1:7233',
      TEMPORAL_UI_PORT: '8233',
      TEMPORAL_DEFAULT_NAMESPACE: 'default',
      TEMPORAL_CODEC_ENDPOINT: 'http://c',
    });
    expect(parse(UI_BASE_CONFIG)).toEqual({ host: '127.0.0.1' });
  });
});

describe('checks', () => {
  it('a different shard count on an existing cluster names the variable, both counts and the way out', () => {
    const error = shardMismatch(8, 4, '/data/cluster');
    expect(error.variable).toBe('LONGRUN_HISTORY_SHARDS');
    expect(error.message).toContain(
      'LONGRUN_HISTORY_SHARDS: is 8, but the cluster in /data/cluster was created with 4',
    );
    expect(error.message).toContain('remove /data/cluster');
  });

  it('the search attribute query names every attribute with a value of its type', () => {
    const query = queryNaming(SEARCH_ATTRIBUTE_TYPES);
    for (const name of Object.keys(SEARCH_ATTRIBUTE_TYPES)) expect(query).toContain(`${name} = `);
    expect(queryNaming({ A: 'Int', B: 'Keyword', C: 'Datetime' })).toBe(
      'A = 0 AND B = "" AND C = "2000-01-01T00:00:00Z"',
    );
  });

  it('membership ports are drawn below 32768 (Temporal keeps them in a SMALLINT column), distinct and free', async () => {
    const ports = await freePortsBetween(20_000, MAX_MEMBERSHIP_PORT, 4);
    expect(new Set(ports).size).toBe(4);
    for (const port of ports) expect(port).toBeGreaterThanOrEqual(20_000);
    for (const port of ports) expect(port).toBeLessThanOrEqual(32_767);
  });
});
