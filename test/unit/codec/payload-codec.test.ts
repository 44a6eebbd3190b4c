/** The payload codec: AES-256-GCM round trips, key rotation, payloads written before encryption, and its errors. */
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import type { Payload } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { DecryptionError, Keyring, UnknownEncryptionKeyError } from '../../../codec/keys.ts';
import type { EncryptionKey } from '../../../codec/keys.ts';
import { ENCODING_ENCRYPTED, EncryptionCodec, keyIdOf, MalformedPayloadError } from '../../../codec/payload-codec.ts';

const key = (id: string): EncryptionKey => ({ id, key: new Uint8Array(randomBytes(32)) });
const text = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('utf8');
const payload = (value: unknown): Payload => defaultPayloadConverter.toPayload(value);
const value = (p: Payload): unknown => defaultPayloadConverter.fromPayload(p);

describe('EncryptionCodec', () => {
  const k1 = key('k1');
  const k2 = key('k2');

  it('round trips every payload, hiding its data and its own metadata', async () => {
    const codec = new EncryptionCodec(new Keyring([k1], 'LONGRUN_ENCRYPTION_KEYS'));
    const originals = [payload({ text: 'the secret plan for Bergen' }), payload(null), payload('')];
    const encoded = await codec.encode(originals);
    expect(encoded).toHaveLength(3);
    for (const p of encoded) {
      expect(Object.keys(p.metadata!).sort()).toEqual(['encoding', 'encryption-key-id']);
      expect(text(p.metadata!.encoding)).toBe(ENCODING_ENCRYPTED);
      expect(keyIdOf(p)).toBe('k1');
      expect(text(p.data)).not.toContain('secret');
      expect(text(p.data)).not.toContain('json/plain');
    }
    const decoded = await codec.decode(encoded);
    expect(decoded.map(value)).toEqual([{ text: 'the secret plan for Bergen' }, null, '']);
    expect(text(decoded[0]!.metadata!.encoding)).toBe('json/plain');
  });

  it('uses a fresh IV each time: the same payload never encrypts to the same bytes', async () => {
    const codec = new EncryptionCodec(new Keyring([k1], 'LONGRUN_ENCRYPTION_KEYS'));
    const [a, b] = await codec.encode([payload('same'), payload('same')]);
    expect(Buffer.from(a!.data!).equals(Buffer.from(b!.data!))).toBe(false);
  });

  it('rotation: new payloads use the newest key; a payload written with the old key still decodes', async () => {
    const before = new EncryptionCodec(new Keyring([k1], 'LONGRUN_ENCRYPTION_KEYS'));
    const [old] = await before.encode([payload('written under k1')]);
    const after = new EncryptionCodec(new Keyring([k1, k2], 'LONGRUN_ENCRYPTION_KEYS'));
    const [fresh] = await after.encode([payload('written under k2')]);
    expect(keyIdOf(old!)).toBe('k1');
    expect(keyIdOf(fresh!)).toBe('k2');
    expect((await after.decode([old!, fresh!])).map(value)).toEqual(['written under k1', 'written under k2']);
  });

  it('an unknown key id is an error naming the id and where the keys come from', async () => {
    const [sealed] = await new EncryptionCodec(new Keyring([k1], 'LONGRUN_ENCRYPTION_KEYS')).encode([payload('x')]);
    const without = new EncryptionCodec(new Keyring([k2], 'LONGRUN_ENCRYPTION_KEYS_FILE (/run/keys)'));
    const failure = without.decode([sealed!]);
    await expect(failure).rejects.toThrow(UnknownEncryptionKeyError);
    await expect(failure).rejects.toThrow(
      'no encryption key with id "k1": the keys come from LONGRUN_ENCRYPTION_KEYS_FILE (/run/keys), and it holds k2',
    );
  });

  it('leaves payloads that are not encrypted as they are (history written before encryption was on)', async () => {
    const codec = new EncryptionCodec(new Keyring([k1], 'LONGRUN_ENCRYPTION_KEYS'));
    const plain = [payload({ text: 'from before' }), { metadata: { encoding: Buffer.from('binary/null') } }];
    const decoded = await codec.decode(plain);
    expect(decoded[0]).toBe(plain[0]);
    expect(decoded[1]).toBe(plain[1]);
  });

  it('without keys (a codec server with none) encode passes payloads through and decode names the missing key', async () => {
    const empty = new EncryptionCodec(new Keyring([], 'LONGRUN_ENCRYPTION_KEYS'));
    const plain = [payload('hello')];
    expect(await empty.encode(plain)).toBe(plain);
    const [sealed] = await new EncryptionCodec(new Keyring([k1], 'x')).encode([payload('x')]);
    await expect(empty.decode([sealed!])).rejects.toThrow('no encryption key with id "k1"');
    await expect(empty.decode([sealed!])).rejects.toThrow('it holds no key');
  });

  it('altered bytes or a different key under the same id fail to decrypt; a payload naming no key is malformed', async () => {
    const codec = new EncryptionCodec(new Keyring([k1], 'LONGRUN_ENCRYPTION_KEYS'));
    const [sealed] = await codec.encode([payload('x')]);
    const flipped = Buffer.from(sealed!.data!);
    flipped[20] = flipped[20]! ^ 1;
    const altered = { ...sealed!, data: flipped };
    await expect(codec.decode([altered])).rejects.toThrow(DecryptionError);
    const impostor = new EncryptionCodec(new Keyring([key('k1')], 'LONGRUN_ENCRYPTION_KEYS'));
    await expect(impostor.decode([sealed!])).rejects.toThrow('a payload does not decrypt with key "k1"');
    const anonymous = { metadata: { encoding: sealed!.metadata!.encoding! }, data: sealed!.data! };
    await expect(codec.decode([anonymous])).rejects.toThrow(MalformedPayloadError);
  });
});
