/**
 * Storing an object in S3 (MinIO) says nothing on the terminal: the AWS SDK warns "Are you using a Stream of unknown
 * length as the Body of a PutObject request?" for a body whose length it does not know (an empty one: a revert's
 * removed segment), unless the length is given.
 */
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { S3BlobStore } from '../../storage/s3.ts';
import { newAgentId } from '../support/harness.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('S3BlobStore.put', () => {
  it('stores an empty body, a text and a multi-byte text with their length: no SDK warning, each read back', async () => {
    const warnings: unknown[][] = [];
    vi.spyOn(console, 'warn').mockImplementation((...args: unknown[]) => void warnings.push(args));
    const store = new S3BlobStore(inject('stack').s3);
    const prefix = `s3-put/${newAgentId('put')}`;
    for (const [name, body] of [
      ['empty', ''],
      ['text', '{"a":1}'],
      ['utf8', 'Tromsø → Bergen 🙂'],
    ]) {
      await store.put(`${prefix}/${name}`, body!, 'text/plain');
      expect(await store.get(`${prefix}/${name}`)).toBe(body);
    }
    expect(warnings).toEqual([]);
  });
});
