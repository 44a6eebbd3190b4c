/**
 * The payload codec: every payload longrun's clients and workers send to Temporal is encrypted with AES-256-GCM under
 * the keyring's newest key, and decrypted again when it comes back. The encrypted payload carries
 *
 *   metadata: { encoding: 'binary/encrypted', 'encryption-key-id': <id> }
 *   data:     iv ‖ AES-256-GCM(Payload protobuf of the original payload) ‖ tag
 *
 * so the original's own metadata (its encoding, e.g. `json/plain`) is hidden too, and a codec server holding the same
 * keys (codec/server.ts, or another SDK's) restores it exactly. Decoding leaves every payload without that encoding as
 * it is: history written before encryption was turned on still reads.
 *
 *   const client = new Client({ connection, dataConverter: encryptionDataConverter(keyring) });
 */
import type { DataConverter, Payload, PayloadCodec } from '@temporalio/common';
import { METADATA_ENCODING_KEY } from '@temporalio/common';
// A CommonJS package whose exports Node cannot list for ESM: its default export is the module.
import protos from '@temporalio/proto';
import { open, seal } from './keys.ts';
import type { Keyring } from './keys.ts';

/** The `encoding` of an encrypted payload (the name Temporal's samples use). */
export const ENCODING_ENCRYPTED = 'binary/encrypted';
/** The metadata key naming the key that encrypted a payload. */
export const METADATA_KEY_ID = 'encryption-key-id';

const PayloadProto = protos.temporal.api.common.v1.Payload;
const utf8 = new TextEncoder();
const text = new TextDecoder();

/** Thrown when a payload says it is encrypted but names no key, or its bytes are not a payload once decrypted. */
export class MalformedPayloadError extends Error {
  constructor(reason: string) {
    super(`an encrypted payload ${reason}`);
    this.name = 'MalformedPayloadError';
  }
}

/** Is the payload one this codec encrypted? */
export function isEncrypted(payload: Payload): boolean {
  const encoding = payload.metadata?.[METADATA_ENCODING_KEY];
  return encoding !== undefined && encoding !== null && text.decode(encoding) === ENCODING_ENCRYPTED;
}

/** The key id an encrypted payload names (undefined for any other payload). */
export function keyIdOf(payload: Payload): string | undefined {
  if (!isEncrypted(payload)) return undefined;
  const id = payload.metadata?.[METADATA_KEY_ID];
  return id ? text.decode(id) : undefined;
}

export class EncryptionCodec implements PayloadCodec {
  readonly keyring: Keyring;

  constructor(keyring: Keyring) {
    this.keyring = keyring;
  }

  /** Encrypts each payload with the newest key; with an empty keyring (a codec server without keys) none. */
  encode(payloads: Payload[]): Promise<Payload[]> {
    return Promise.resolve().then(() => {
      const key = this.keyring.newest;
      if (!key) return payloads;
      return payloads.map((payload) => ({
        metadata: { [METADATA_ENCODING_KEY]: utf8.encode(ENCODING_ENCRYPTED), [METADATA_KEY_ID]: utf8.encode(key.id) },
        data: seal(key, PayloadProto.encode(payload).finish()),
      }));
    });
  }

  /** Decrypts each encrypted payload with the key it names; any other payload passes through unchanged. */
  decode(payloads: Payload[]): Promise<Payload[]> {
    return Promise.resolve().then(() => payloads.map((payload) => this.decodeOne(payload)));
  }

  private decodeOne(payload: Payload): Payload {
    if (!isEncrypted(payload)) return payload;
    const id = keyIdOf(payload);
    if (id === undefined) throw new MalformedPayloadError(`names no key (metadata ${METADATA_KEY_ID} is missing)`);
    const plain = open(this.keyring.byId(id), payload.data ?? new Uint8Array(), undefined, 'a payload');
    try {
      return PayloadProto.decode(plain);
    } catch {
      throw new MalformedPayloadError(`under key ${JSON.stringify(id)} does not hold a payload once decrypted`);
    }
  }
}

/** What clients and workers get when encryption is on: the codec, and otherwise Temporal's defaults. */
export function encryptionDataConverter(keyring: Keyring): DataConverter {
  return { payloadCodecs: [new EncryptionCodec(keyring)] };
}
