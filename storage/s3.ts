/**
 * The S3-compatible store: a small {@link BlobStore} interface (put, get, ensure bucket) and its adapter for
 * `@aws-sdk/client-s3`. Connection settings come from the AWS SDK's own chain (AWS_ENDPOINT_URL_S3,
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_PROFILE, ...), unless an explicit target is given
 * (the embedded MinIO).
 */
import {
  CreateBucketCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  NoSuchKey,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { DEFAULTS } from '../config/settings.ts';
import type { Env } from '../config/settings.ts';

/** Where objects go. Fields left out come from the AWS SDK's configuration chain. */
export interface S3Target {
  bucket: string;
  forcePathStyle: boolean;
  endpoint?: string;
  region?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string };
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

export class S3BlobStore implements BlobStore {
  readonly bucket: string;
  readonly client: S3Client;

  constructor(target: S3Target, client: S3Client = createS3Client(target)) {
    this.bucket = target.bucket;
    this.client = client;
  }

  async put(key: string, body: string, contentType = 'application/json'): Promise<void> {
    await this.client.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: contentType }),
    );
  }

  async get(key: string): Promise<string | undefined> {
    try {
      const result = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      return (await result.Body?.transformToString('utf8')) ?? '';
    } catch (error) {
      if (error instanceof NoSuchKey) return undefined;
      throw error;
    }
  }

  /** Up to `limit` keys under `prefix` that sort after `startAfter`, in key order. */
  async list(prefix: string, options: { startAfter?: string; limit?: number } = {}): Promise<string[]> {
    const result = await this.client.send(
      new ListObjectsV2Command({
        Bucket: this.bucket,
        Prefix: prefix,
        ...(options.startAfter ? { StartAfter: options.startAfter } : {}),
        MaxKeys: options.limit ?? 1000,
      }),
    );
    return (result.Contents ?? []).flatMap((object) => (object.Key ? [object.Key] : []));
  }

  async ensureBucket(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
      return;
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status !== 404) throw error;
    }
    try {
      await this.client.send(new CreateBucketCommand({ Bucket: this.bucket }));
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
 * The store the worker and the CLI use: the one the AWS SDK chain names when AWS_ENDPOINT_URL_S3 is set,
 * otherwise the embedded MinIO on its standard port with its local-only credentials.
 */
export function s3TargetFromEnv(
  settings: { bucket: string; forcePathStyle: boolean; ports: { minio: number } },
  env: Env = process.env,
): S3Target {
  if (s3EndpointConfigured(env)) return { bucket: settings.bucket, forcePathStyle: settings.forcePathStyle };
  return {
    bucket: settings.bucket,
    forcePathStyle: true,
    endpoint: `http://127.0.0.1:${settings.ports.minio}`,
    region: DEFAULTS.region,
    credentials: { accessKeyId: DEFAULTS.minioUser, secretAccessKey: DEFAULTS.minioPassword },
  };
}
