import { describe, expect, it } from 'vitest';
import { minioArgs } from '../../../stack/minio.ts';
import { temporalArgs } from '../../../stack/temporal.ts';

describe('server command lines', () => {
  const base = { binary: 'temporal', port: 7233, uiPort: 8233, logPath: 'x.log', namespace: 'default' };

  it('persistent Temporal: SQLite file in WAL mode, UI on, search attributes registered', () => {
    const args = temporalArgs({ ...base, dbFile: '/data/temporal.db' });
    expect(args.slice(0, 6)).toEqual(['server', 'start-dev', '--ip', '127.0.0.1', '--port', '7233']);
    expect(args).toContain('--ui-port');
    expect(args).not.toContain('--headless');
    expect(args.join(' ')).toContain('--db-filename /data/temporal.db --sqlite-pragma journal_mode=WAL');
    for (const attribute of [
      'AgentContextTokens=Int',
      'AgentCompactions=Int',
      'AgentStatus=Keyword',
      'AgentModel=Keyword',
      'AgentLastCompactedAt=Datetime',
      'AgentCompressions=Int', // the former name, still registered for agents that wrote it
      'AgentCost=Double',
    ]) {
      expect(args.join(' ')).toContain(`--search-attribute ${attribute}`);
    }
  });

  it('in-memory Temporal for tests, with dynamic config values as JSON', () => {
    const args = temporalArgs({ ...base, dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 50, x: 'y' } });
    expect(args).not.toContain('--db-filename');
    expect(args.join(' ')).toContain('--dynamic-config-value limit.historyCount.suggestContinueAsNew=50');
    expect(args.join(' ')).toContain('--dynamic-config-value x="y"');
    expect(args.join(' ')).toContain('--dynamic-config-value system.enableActivityEagerExecution=true');
  });

  it("encryption on: the UI is told its codec server's endpoint; off: no such flag", () => {
    const args = temporalArgs({ ...base, uiCodecEndpoint: 'http://127.0.0.1:8081' });
    expect(args.join(' ')).toContain('--ui-codec-endpoint http://127.0.0.1:8081');
    expect(temporalArgs(base)).not.toContain('--ui-codec-endpoint');
  });

  it('MinIO on loopback with its own console port', () => {
    const args = minioArgs({
      binary: 'minio',
      port: 9000,
      consolePort: 9001,
      dataDir: '/d',
      logPath: 'm.log',
      user: 'u',
      password: 'p',
      bucket: 'b',
      region: 'us-east-1',
    });
    expect(args).toEqual([
      'server',
      '/d',
      '--address',
      '127.0.0.1:9000',
      '--console-address',
      '127.0.0.1:9001',
      '--quiet',
    ]);
  });
});
