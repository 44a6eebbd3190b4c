/** Raw payloads decoded as the client decodes them (client/payloads.ts): through every codec, last first. */
import { defaultDataConverter, defaultPayloadConverter } from '@temporalio/common';
import type { LoadedDataConverter, Payload, PayloadCodec } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { decodePayloadAt } from '../../client/payloads.ts';

/** A codec that wraps each payload's bytes in its tag (and refuses a payload it did not wrap). */
function tagging(tag: string): PayloadCodec {
  const prefix = new TextEncoder().encode(`${tag}:`);
  const wrap = (p: Payload): Payload => ({ metadata: p.metadata, data: new Uint8Array([...prefix, ...p.data!]) });
  const unwrap = (p: Payload): Payload => {
    const data = p.data!;
    if (new TextDecoder().decode(data.slice(0, prefix.length)) !== `${tag}:`) throw new Error(`not ${tag}'s`);
    return { metadata: p.metadata, data: data.slice(prefix.length) };
  };
  return {
    encode: (payloads) => Promise.resolve(payloads.map(wrap)),
    decode: (payloads) => Promise.resolve(payloads.map(unwrap)),
  };
}

describe('decodePayloadAt', () => {
  it('decodes through the codecs in reverse order (the data converter encodes first to last), then converts', async () => {
    const codecs = [tagging('outer-first'), tagging('second')];
    const converter: LoadedDataConverter = { ...defaultDataConverter, payloadCodecs: codecs };
    let payloads: Payload[] = [
      defaultPayloadConverter.toPayload({ chunk: 2, chunks: 5 }),
      defaultPayloadConverter.toPayload('b'),
    ];
    for (const codec of codecs) payloads = await codec.encode(payloads);
    expect(await decodePayloadAt(converter, 0, payloads)).toEqual({ chunk: 2, chunks: 5 });
    expect(await decodePayloadAt(converter, 1, payloads)).toBe('b');
    expect(await decodePayloadAt(converter, 2, payloads)).toBeUndefined();
  });

  it('no payloads: undefined, with or without codecs', async () => {
    const converter: LoadedDataConverter = { ...defaultDataConverter, payloadCodecs: [tagging('x')] };
    expect(await decodePayloadAt(converter, 0, undefined)).toBeUndefined();
    expect(await decodePayloadAt(converter, 0, null)).toBeUndefined();
    expect(await decodePayloadAt(defaultDataConverter, 0, [])).toBeUndefined();
  });
});
