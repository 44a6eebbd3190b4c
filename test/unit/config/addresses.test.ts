/** The one answer to "where is Temporal, where is S3" (config/addresses.ts), by its precedence. */
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anotherTerminalHint, chooseS3, chooseTemporal, exportsForAnotherShell } from '../../../config/addresses.ts';
import { loadTemporalTarget } from '../../../config/temporal.ts';
import { s3TargetFromEnv } from '../../../storage/s3.ts';
import { loadSettings } from '../../../config/settings.ts';

/** A home whose temporal CLI config (the default file) has a default profile and a `cloud` one. */
function homeWithProfiles(): string {
  const home = mkdtempSync(join(tmpdir(), 'longrun-home-'));
  mkdirSync(join(home, '.config', 'temporalio'), { recursive: true });
  writeFileSync(
    join(home, '.config', 'temporalio', 'temporal.toml'),
    '[profile.default]\naddress = "default.example:7233"\nnamespace = "team"\n\n' +
      '[profile.cloud]\naddress = "cloud.example:7233"\nnamespace = "prod"\n',
  );
  return home;
}
const emptyHome = () => ({ HOME: mkdtempSync(join(tmpdir(), 'longrun-home-')) });

describe('where Temporal is', () => {
  it('without anything set: 127.0.0.1:7233, where npm start runs its server', () => {
    const choice = chooseTemporal(emptyHome());
    expect(choice).toMatchObject({ address: '127.0.0.1:7233', origin: 'default', external: false });
  });

  it('LONGRUN_TEMPORAL_PORT moves it on loopback, for the CLI as for the main job', () => {
    const env = { ...emptyHome(), LONGRUN_TEMPORAL_PORT: '17233' };
    expect(chooseTemporal(env)).toMatchObject({
      address: '127.0.0.1:17233',
      origin: 'LONGRUN_TEMPORAL_PORT',
      external: false,
      text: '127.0.0.1:17233 (LONGRUN_TEMPORAL_PORT=17233, where `npm start` runs its Temporal)',
    });
    const target = loadTemporalTarget(env);
    expect(target.connectionOptions.address).toBe('127.0.0.1:17233');
    expect(target.configured).toBe(false); // the main job starts its own server there
  });

  it('the precedence: TEMPORAL_ADDRESS, a chosen profile, LONGRUN_TEMPORAL_PORT, the default profile, 7233', () => {
    const HOME = homeWithProfiles();
    const base = { HOME, LONGRUN_TEMPORAL_PORT: '17233' };
    expect(chooseTemporal({ ...base, TEMPORAL_ADDRESS: 'x.example:7233', TEMPORAL_PROFILE: 'cloud' })).toMatchObject({
      address: 'x.example:7233',
      origin: 'TEMPORAL_ADDRESS',
      external: true,
      text: 'TEMPORAL_ADDRESS=x.example:7233 (from the environment)',
    });
    const cloud = chooseTemporal({ ...base, TEMPORAL_PROFILE: 'cloud' });
    expect(cloud).toMatchObject({ address: 'cloud.example:7233', origin: 'profile', external: true });
    expect(cloud.text).toBe('cloud.example:7233 (from the temporal CLI\'s profile "cloud")');
    expect(loadTemporalTarget({ ...base, TEMPORAL_PROFILE: 'cloud' }).namespace).toBe('prod');
    // The default profile, not chosen, gives way to LONGRUN_TEMPORAL_PORT, and so does its namespace.
    const port = chooseTemporal(base);
    expect(port).toMatchObject({ address: '127.0.0.1:17233', origin: 'LONGRUN_TEMPORAL_PORT' });
    expect(loadTemporalTarget(base).namespace).toBe('default');
    expect(chooseTemporal({ HOME })).toMatchObject({ address: 'default.example:7233', origin: 'profile' });
    expect(loadTemporalTarget({ HOME, TEMPORAL_NAMESPACE: 'mine' }).namespace).toBe('mine');
  });

  it('a bad LONGRUN_TEMPORAL_PORT is an error naming it', () => {
    expect(() => chooseTemporal({ ...emptyHome(), LONGRUN_TEMPORAL_PORT: 'x' })).toThrow(
      'LONGRUN_TEMPORAL_PORT: must be an integer from 1 to 65535 (got "x")',
    );
  });
});

describe('where S3 is', () => {
  it('AWS_ENDPOINT_URL_S3, then AWS_ENDPOINT_URL, then the embedded MinIO on LONGRUN_MINIO_PORT', () => {
    expect(chooseS3({ AWS_ENDPOINT_URL_S3: 'http://s3:1', AWS_ENDPOINT_URL: 'http://all:2' }, 9000)).toMatchObject({
      address: 'http://s3:1',
      origin: 'AWS_ENDPOINT_URL_S3',
      external: true,
    });
    expect(chooseS3({ AWS_ENDPOINT_URL: 'http://all:2' }, 9000)).toMatchObject({ origin: 'AWS_ENDPOINT_URL' });
    expect(chooseS3({ LONGRUN_MINIO_PORT: '19000' }, 19000)).toMatchObject({
      address: 'http://127.0.0.1:19000',
      origin: 'LONGRUN_MINIO_PORT',
      external: false,
    });
    const env = { LONGRUN_MINIO_PORT: '19000' };
    expect(s3TargetFromEnv(loadSettings(env), env)).toMatchObject({ endpoint: 'http://127.0.0.1:19000' });
    expect(chooseS3({}, 9000)).toMatchObject({ address: 'http://127.0.0.1:9000', origin: 'default' });
  });
});

describe('what another shell needs', () => {
  it('the exports that decide where a process goes, and secrets by name only', () => {
    const env = {
      LONGRUN_TEMPORAL_PORT: '17233',
      LONGRUN_MINIO_PORT: '19000',
      LONGRUN_TEMPORAL_UI_PORT: '18233',
      LONGRUN_ENCRYPTION_KEYS: 'k1:c2VjcmV0',
    };
    expect(exportsForAnotherShell(env)).toEqual({
      command: 'export LONGRUN_TEMPORAL_PORT=17233 LONGRUN_MINIO_PORT=19000',
      secrets: ['LONGRUN_ENCRYPTION_KEYS'],
    });
    const hint = anotherTerminalHint(env);
    expect(hint).toBe(
      'try `npx longrun state <agent>` from another terminal, with `export LONGRUN_TEMPORAL_PORT=17233 ' +
        'LONGRUN_MINIO_PORT=19000` and the same LONGRUN_ENCRYPTION_KEYS there (to reach these servers)',
    );
    expect(hint).not.toContain('c2VjcmV0');
    expect(anotherTerminalHint({})).toBe('try `npx longrun state <agent>` from another terminal');
  });
});
