/** LONGRUN_ENCRYPTION_KEYS and LONGRUN_ENCRYPTION_KEYS_FILE: order, validation, and errors that never print a key. */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSettings, readEncryptionKeys, SettingsError } from '../../../config/settings.ts';
import { loadTemporalTarget } from '../../../config/temporal.ts';
import { EncryptionCodec } from '../../../codec/payload-codec.ts';
import { s3TargetFromEnv } from '../../../storage/s3.ts';

const b64 = (bytes = 32) => randomBytes(bytes).toString('base64');

describe('encryption keys', () => {
  it('off when neither variable is set: no keys, no codec, no S3 encryption', () => {
    const settings = loadSettings({});
    expect(settings.encryptionKeys).toBeUndefined();
    expect(loadTemporalTarget({}).dataConverter).toBeUndefined();
    expect(s3TargetFromEnv(settings, {}).encryption).toBeUndefined();
  });

  it('reads id:base64key entries, the last the newest, and wires them to Temporal and S3', () => {
    const [a, b] = [b64(), b64()];
    const env = { LONGRUN_ENCRYPTION_KEYS: ` old:${a} , new:${b} ` };
    const keys = readEncryptionKeys(env)!;
    expect(keys.keys.map((k) => k.id)).toEqual(['old', 'new']);
    expect(keys.newest!.id).toBe('new');
    expect(Buffer.from(keys.byId('old').key).toString('base64')).toBe(a);
    expect(keys.source).toBe('LONGRUN_ENCRYPTION_KEYS');
    const codec = loadTemporalTarget(env).dataConverter!.payloadCodecs![0];
    expect(codec).toBeInstanceOf(EncryptionCodec);
    expect((codec as EncryptionCodec).keyring.newest!.id).toBe('new');
    expect(s3TargetFromEnv(loadSettings(env), env).encryption!.newest!.id).toBe('new');
  });

  it('reads a file of the same entries, one a line, with comments and blank lines', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'longrun-keys-')), 'keys');
    writeFileSync(file, `# rotated 2025-01\n2024-q4:${b64()}\n\n2025-q1:${b64()}\n`);
    const keys = loadSettings({ LONGRUN_ENCRYPTION_KEYS_FILE: file }).encryptionKeys!;
    expect(keys.keys.map((k) => k.id)).toEqual(['2024-q4', '2025-q1']);
    expect(keys.source).toBe(`LONGRUN_ENCRYPTION_KEYS_FILE (${file})`);
  });

  const secret = b64(16);
  it.each([
    [
      { LONGRUN_ENCRYPTION_KEYS: `k1:${secret}` },
      'LONGRUN_ENCRYPTION_KEYS: key k1 is 16 bytes; AES-256 needs exactly 32',
    ],
    [{ LONGRUN_ENCRYPTION_KEYS: `k1:${b64()},k1:${b64()}` }, 'LONGRUN_ENCRYPTION_KEYS: key id k1 appears twice'],
    [{ LONGRUN_ENCRYPTION_KEYS: `${b64()}` }, 'LONGRUN_ENCRYPTION_KEYS: entry 1 must be id:base64key'],
    [
      { LONGRUN_ENCRYPTION_KEYS: `a b:${b64()}` },
      'LONGRUN_ENCRYPTION_KEYS: entry 1: the key id must be 1 to 64 letters',
    ],
    [{ LONGRUN_ENCRYPTION_KEYS: `k1:not*base64!` }, 'LONGRUN_ENCRYPTION_KEYS: key k1 is not valid base64'],
    [{ LONGRUN_ENCRYPTION_KEYS: ' , ' }, 'LONGRUN_ENCRYPTION_KEYS: names no key'],
    [
      { LONGRUN_ENCRYPTION_KEYS: Array.from({ length: 101 }, (_, i) => `k${i}:${b64()}`).join(',') },
      'LONGRUN_ENCRYPTION_KEYS: names 101 keys; at most 100',
    ],
    [
      { LONGRUN_ENCRYPTION_KEYS: `k1:${b64()}`, LONGRUN_ENCRYPTION_KEYS_FILE: '/k' },
      'LONGRUN_ENCRYPTION_KEYS_FILE: cannot go with LONGRUN_ENCRYPTION_KEYS',
    ],
    [
      { LONGRUN_ENCRYPTION_KEYS_FILE: '/nonexistent/keys' },
      'LONGRUN_ENCRYPTION_KEYS_FILE: cannot read /nonexistent/keys',
    ],
    [
      { LONGRUN_CODEC_ORIGINS: 'http://localhost:8080/ui' },
      'LONGRUN_CODEC_ORIGINS: "http://localhost:8080/ui" is not an origin',
    ],
    [{ LONGRUN_CODEC_PORT: '0' }, 'LONGRUN_CODEC_PORT: must be an integer from 1 to 65535'],
  ])('%o is an error naming the variable and the limit', (env, message) => {
    expect(() => loadSettings(env)).toThrow(SettingsError);
    expect(() => loadSettings(env)).toThrow(message);
    // A key's bytes never reach the message.
    expect(() => loadSettings(env)).not.toThrow(secret);
  });

  it('reads the codec server settings: port, origins, authorization (never printed)', () => {
    const settings = loadSettings({
      LONGRUN_CODEC_PORT: '9090',
      LONGRUN_CODEC_ORIGINS: 'http://localhost:8080, https://temporal.example.com',
      LONGRUN_CODEC_AUTHORIZATION: 'Bearer s3cret',
    });
    expect(settings.codecServer).toEqual({
      port: 9090,
      origins: ['http://localhost:8080', 'https://temporal.example.com'],
      authorization: 'Bearer s3cret',
    });
    expect(loadSettings({}).codecServer).toEqual({ port: 8081, origins: [] });
    expect(() => loadSettings({ LONGRUN_CODEC_AUTHORIZATION: ' Bearer s3cret' })).toThrow(
      /^LONGRUN_CODEC_AUTHORIZATION: must not start or end with spaces$/,
    );
  });
});
