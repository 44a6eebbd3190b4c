/**
 * Payloads the workflow service hands back raw (a run's start input in its history, a pending activity's heartbeat
 * details in a describe), decoded as the client decodes everything else: through its data converter's codecs (the
 * encryption codec when keys are set), last first, then its payload converter. Only public API of
 * `@temporalio/common` 1.24: the loaded converter's parts and `fromPayloadsAtIndex`. The SDK's own helper for this
 * (`decodeFromPayloadsAtIndex`) is exported only from an internal path, `lib/internal-non-workflow`, which the SDK
 * may change in any release.
 */
import { fromPayloadsAtIndex } from '@temporalio/common';
import type { LoadedDataConverter, Payload } from '@temporalio/common';

/** The value at `index` of `payloads`, decoded with `converter` (undefined when there is none at that index). */
export async function decodePayloadAt<T>(
  converter: LoadedDataConverter,
  index: number,
  payloads: Payload[] | null | undefined,
): Promise<T> {
  let decoded = payloads;
  if (decoded != null) {
    for (const codec of [...converter.payloadCodecs].reverse()) decoded = await codec.decode(decoded);
  }
  return fromPayloadsAtIndex<T>(converter.payloadConverter, index, decoded);
}
