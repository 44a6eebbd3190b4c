/**
 * Encryption keys and AES-256-GCM, as longrun uses them for Temporal payloads (codec/payload-codec.ts) and S3 objects
 * (storage/s3.ts). A {@link Keyring} holds the keys in the order they were added: the last is the newest, and new
 * data is sealed with it; older keys stay to open what they sealed (rotation). Where the keys come from (a variable,
 * a file) is config/settings.ts's business; the keyring only names it in its errors.
 *
 *   const ring = new Keyring([{ id: '2025-01', key: randomBytes(32) }], 'LONGRUN_ENCRYPTION_KEYS');
 *   const sealed = seal(ring.newest!, Buffer.from('hello'));
 *   open(ring.byId(ring.newest!.id), sealed); // the bytes of 'hello'
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** AES-256: a key is 32 bytes. */
export const KEY_BYTES = 32;
/** A fresh random 96-bit IV per message, the size GCM is defined for. */
export const IV_BYTES = 12;
/** GCM's full 128-bit authentication tag. */
export const TAG_BYTES = 16;
/** Key ids: what goes into payload metadata and object metadata, so letters, digits, `.`, `_`, `-`. */
export const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;

export interface EncryptionKey {
  /** Names the key in what it sealed (payload and object metadata); never secret. */
  readonly id: string;
  /** 32 bytes. */
  readonly key: Uint8Array;
}

/** Thrown when data was sealed with a key id the keyring does not hold. Names the id and where keys come from. */
export class UnknownEncryptionKeyError extends Error {
  readonly keyId: string;
  constructor(keyId: string, ring: Keyring) {
    const held = ring.keys.length ? `it holds ${ring.keys.map((k) => k.id).join(', ')}` : 'it holds no key';
    super(
      `no encryption key with id ${JSON.stringify(keyId)}: the keys come from ${ring.source}, and ${held}. ` +
        'Add the key with that id back (after a rotation, keep the old keys listed before the new one).',
    );
    this.name = 'UnknownEncryptionKeyError';
    this.keyId = keyId;
  }
}

/** Thrown when sealed bytes do not open with their key: a different key under the same id, or altered bytes. */
export class DecryptionError extends Error {
  readonly keyId: string;
  constructor(keyId: string, what: string) {
    super(
      `${what} does not decrypt with key ${JSON.stringify(keyId)}: the key differs from the one that encrypted it, or the bytes were altered`,
    );
    this.name = 'DecryptionError';
    this.keyId = keyId;
  }
}

/** The keys, oldest first; `newest` seals, any of them opens. */
export class Keyring {
  readonly keys: readonly EncryptionKey[];
  /** Where the keys come from, for error messages (e.g. `LONGRUN_ENCRYPTION_KEYS`). */
  readonly source: string;
  private readonly byIds: ReadonlyMap<string, EncryptionKey>;

  constructor(keys: readonly EncryptionKey[], source: string) {
    for (const { id, key } of keys) {
      if (!KEY_ID.test(id)) throw new Error(`key id ${JSON.stringify(id)}: 1 to 64 letters, digits, '.', '_' or '-'`);
      if (key.length !== KEY_BYTES) throw new Error(`key ${id}: ${key.length} bytes, AES-256 needs ${KEY_BYTES}`);
    }
    this.byIds = new Map(keys.map((key) => [key.id, key]));
    if (this.byIds.size !== keys.length) throw new Error('every key needs its own id');
    this.keys = [...keys];
    this.source = source;
  }

  /** The key new data is sealed with: the last one; undefined when the ring is empty. */
  get newest(): EncryptionKey | undefined {
    return this.keys.at(-1);
  }

  /** The key with that id, or {@link UnknownEncryptionKeyError}. */
  byId(id: string): EncryptionKey {
    const key = this.byIds.get(id);
    if (!key) throw new UnknownEncryptionKeyError(id, this);
    return key;
  }
}

/** AES-256-GCM with a fresh random IV: iv ‖ ciphertext ‖ tag. `aad`, when given, must be given again to open. */
export function seal(key: EncryptionKey, plaintext: Uint8Array, aad?: Uint8Array): Uint8Array {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key.key, iv, { authTagLength: TAG_BYTES });
  if (aad) cipher.setAAD(aad);
  return Buffer.concat([iv, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
}

/** Opens what {@link seal} sealed with `key` (and the same `aad`); {@link DecryptionError} otherwise. */
export function open(key: EncryptionKey, sealed: Uint8Array, aad?: Uint8Array, what = 'the data'): Uint8Array {
  if (sealed.length < IV_BYTES + TAG_BYTES) throw new DecryptionError(key.id, what);
  const iv = sealed.subarray(0, IV_BYTES);
  const tag = sealed.subarray(sealed.length - TAG_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key.key, iv, { authTagLength: TAG_BYTES });
  decipher.setAuthTag(tag);
  if (aad) decipher.setAAD(aad);
  try {
    return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)), decipher.final()]);
  } catch {
    throw new DecryptionError(key.id, what);
  }
}
