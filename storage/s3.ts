/**
 * The S3-compatible store: a small {@link BlobStore} interface (put, get, ensure bucket) and its adapter for
 * `@aws-sdk/client-s3`. Connection settings come from the AWS SDK's own chain (AWS_ENDPOINT_URL_S3,
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_PROFILE, ...), unless an explicit target is given
 * (the embedded MinIO).
 *
 * With encryption on (`target.encryption`), bodies are encrypted on the client with the keys that encrypt Temporal's
 * payloads (AES-256-GCM, the object key as associated data), and the object's metadata names the key
 * (`x-amz-meta-longrun-encryption-key-id`). Reading goes by that metadata: objects written before encryption was
 * turned on read as they are, and nothing already stored is rewritten. Why client-side: docs/encryption.md.
 */
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  NoSuchKey,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { open, seal } from '../codec/keys.ts';
import type { Keyring } from '../codec/keys.ts';
import { chooseS3, s3Advice } from '../config/addresses.ts';
import type { AddressChoice } from '../config/addresses.ts';
import { DEFAULTS } from '../config/settings.ts';
import type { Env } from '../config/settings.ts';

/** Where objects go. Fields left out come from the AWS SDK's configuration chain. */
export interface S3Target {
  bucket: string;
  forcePathStyle: boolean;
  endpoint?: string;
  region?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** Encrypt bodies with the newest key of this keyring (and read encrypted ones with any of its keys). */
  encryption?: Keyring;
  /** Where the endpoint came from (config/addresses.ts), for the error when it does not answer. */
  choice?: AddressChoice;
}

/** Thrown when the S3 endpoint does not answer: names it, what pointed there, and what to do. */
export class StorageNotAnsweringError extends Error {
  /** The network error's code (ECONNREFUSED, …; ETIMEDOUT for a timeout): what retries judge it by. */
  readonly code: string;
  constructor(target: S3Target, why: string, cause: unknown) {
    const where = target.choice?.text ?? target.endpoint ?? 'the endpoint of the AWS SDK configuration';
    super(`S3 at ${where} does not answer (${why})${target.choice ? `: ${s3Advice(target.choice)}` : ''}`, { cause });
    this.name = 'StorageNotAnsweringError';
    this.code = (cause as { code?: string } | undefined)?.code ?? 'ETIMEDOUT';
  }
}

/** Network failures: the store is not there (as opposed to an answer from it). */
const NOT_ANSWERING = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ETIMEDOUT']);

function notAnswering(error: unknown): string | undefined {
  const { code, name, message } = (error ?? {}) as { code?: string; name?: string; message?: string };
  if (code !== undefined && NOT_ANSWERING.has(code)) return message || code;
  if (name === 'TimeoutError') return 'no answer in time';
  return undefined;
}

/** Object metadata of an encrypted body (S3 sends it as x-amz-meta-…, and lowercases it). */
export const OBJECT_METADATA = {
  /** The id of the key that encrypted the body. */
  keyId: 'longrun-encryption-key-id',
  /** The cipher: `aes-256-gcm`. */
  cipher: 'longrun-encryption',
  /** The body's own content type (the object's is application/octet-stream). */
  contentType: 'longrun-content-type',
} as const;

/** Thrown when an object is encrypted and this store has no keys to read it. */
export class EncryptedObjectError extends Error {
  readonly key: string;
  readonly keyId: string;
  constructor(key: string, keyId: string) {
    super(
      `object ${key} is encrypted (key ${JSON.stringify(keyId)}) and no encryption keys are set: ` +
        'set LONGRUN_ENCRYPTION_KEYS or LONGRUN_ENCRYPTION_KEYS_FILE to the keys the worker uses',
    );
    this.name = 'EncryptedObjectError';
    this.key = key;
    this.keyId = keyId;
  }
}

/** What longrun needs from object storage. */
export interface BlobStore {
  readonly bucket: string;
  put(key: string, body: string, contentType?: string): Promise<void>;
  /** The object's text, or undefined when there is no such key. */
  get(key: string): Promise<string | undefined>;
  /** Creates the bucket unless it exists. */
  ensureBucket(): Promise<void>;
}

/**
 * AWS_REGION / AWS_DEFAULT_REGION / a profile decide the region as the SDK does; with none of them (typical for
 * MinIO) we use us-east-1 instead of failing on "Region is missing".
 */
export function regionFallback(env: Env): string | undefined {
  return env.AWS_REGION || env.AWS_DEFAULT_REGION || env.AWS_PROFILE ? undefined : DEFAULTS.region;
}

export function createS3Client(target: S3Target, env: Env = process.env): S3Client {
  return new S3Client({
    forcePathStyle: target.forcePathStyle,
    ...(target.endpoint ? { endpoint: target.endpoint } : {}),
    ...(target.credentials ? { credentials: target.credentials } : {}),
    ...((target.region ?? regionFallback(env)) ? { region: target.region ?? regionFallback(env) } : {}),
  });
}

const utf8 = new TextEncoder();

export class S3BlobStore implements BlobStore {
  readonly bucket: string;
  readonly client: S3Client;
  private readonly encryption: Keyring | undefined;
  private readonly target: S3Target;

  constructor(target: S3Target, client: S3Client = createS3Client(target)) {
    this.bucket = target.bucket;
    this.client = client;
    this.encryption = target.encryption;
    this.target = target;
  }

  /** Sends a command; a store that does not answer is a {@link StorageNotAnsweringError} naming what pointed there. */
  private async reach<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      const why = notAnswering(error);
      throw why === undefined ? error : new StorageNotAnsweringError(this.target, why, error);
    }
  }

  async put(key: string, body: string, contentType = 'application/json'): Promise<void> {
    await this.send(key, body, contentType, false);
  }

  /**
   * Creates `key` only if there is no object there yet (a conditional put, `If-None-Match: *`): true when this call
   * created it, false when one was there (412 Precondition Failed; 409 when another conditional put of the same key
   * was in flight). What the live stream's segments are written with (storage/stream-log.ts).
   */
  async putIfAbsent(key: string, body: string, contentType = 'application/json'): Promise<boolean> {
    try {
      await this.send(key, body, contentType, true);
      return true;
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status === 412 || status === 409) return false;
      throw error;
    }
  }

  private async send(key: string, body: string, contentType: string, ifAbsent: boolean): Promise<void> {
    const newest = this.encryption?.newest;
    // The body's length given, always: the SDK sets none for an empty body (a revert's removed segment) and then
    // warns on the user's terminal about "a Stream of unknown length".
    const bytes = newest ? seal(newest, utf8.encode(body), utf8.encode(key)) : utf8.encode(body);
    await this.reach(() =>
      this.client.send(
        new PutObjectCommand({
          ...(ifAbsent ? { IfNoneMatch: '*' } : {}),
          ...(newest
            ? {
                Bucket: this.bucket,
                Key: key,
                Body: bytes,
                ContentLength: bytes.byteLength,
                ContentType: 'application/octet-stream',
                Metadata: {
                  [OBJECT_METADATA.cipher]: 'aes-256-gcm',
                  [OBJECT_METADATA.keyId]: newest.id,
                  [OBJECT_METADATA.contentType]: contentType,
                },
              }
            : {
                Bucket: this.bucket,
                Key: key,
                Body: bytes,
                ContentLength: bytes.byteLength,
                ContentType: contentType,
              }),
        }),
      ),
    );
  }

  async get(key: string): Promise<string | undefined> {
    try {
      const result = await this.reach(() => this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key })));
      const keyId = result.Metadata?.[OBJECT_METADATA.keyId];
      if (keyId === undefined) return (await result.Body?.transformToString('utf8')) ?? '';
      if (!this.encryption) throw new EncryptedObjectError(key, keyId);
      const sealed = (await result.Body?.transformToByteArray()) ?? new Uint8Array();
      const plain = open(this.encryption.byId(keyId), sealed, utf8.encode(key), `object ${key}`);
      return Buffer.from(plain).toString('utf8');
    } catch (error) {
      if (error instanceof NoSuchKey) return undefined;
      throw error;
    }
  }

  /** Deletes `key` (nothing there: nothing to do). What the search index drops merged segments with. */
  async delete(key: string): Promise<void> {
    await this.reach(() => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key })));
  }

  /** Up to `limit` keys under `prefix` that sort after `startAfter`, in key order. */
  async list(prefix: string, options: { startAfter?: string; limit?: number } = {}): Promise<string[]> {
    const result = await this.reach(() =>
      this.client.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: prefix,
          ...(options.startAfter ? { StartAfter: options.startAfter } : {}),
          MaxKeys: options.limit ?? 1000,
        }),
      ),
    );
    return (result.Contents ?? []).flatMap((object) => (object.Key ? [object.Key] : []));
  }

  async ensureBucket(): Promise<void> {
    try {
      await this.reach(() => this.client.send(new HeadBucketCommand({ Bucket: this.bucket })));
      return;
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status !== 404) throw error;
    }
    try {
      await this.reach(() => this.client.send(new CreateBucketCommand({ Bucket: this.bucket })));
    } catch (error) {
      const name = (error as { name?: string }).name;
      if (name !== 'BucketAlreadyOwnedByYou' && name !== 'BucketAlreadyExists') throw error;
    }
  }
}

/** Does the environment point at an S3-compatible store? Then longrun starts no MinIO of its own. */
export function s3EndpointConfigured(env: Env): boolean {
  return Boolean(env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL);
}

/**
 * The store the worker and the CLI use (config/addresses.ts): the one the AWS SDK chain names when
 * AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL is set, otherwise the embedded MinIO on LONGRUN_MINIO_PORT (default 9000)
 * with its local-only credentials.
 */
export function s3TargetFromEnv(
  settings: { bucket: string; forcePathStyle: boolean; ports: { minio: number }; encryptionKeys?: Keyring },
  env: Env = process.env,
): S3Target {
  const encryption = settings.encryptionKeys ? { encryption: settings.encryptionKeys } : {};
  const choice = chooseS3(env, settings.ports.minio);
  if (choice.external)
    return { bucket: settings.bucket, forcePathStyle: settings.forcePathStyle, ...encryption, choice };
  return {
    ...encryption,
    choice,
    bucket: settings.bucket,
    forcePathStyle: true,
    endpoint: choice.address,
    region: DEFAULTS.region,
    credentials: { accessKeyId: DEFAULTS.minioUser, secretAccessKey: DEFAULTS.minioPassword },
  };
}
