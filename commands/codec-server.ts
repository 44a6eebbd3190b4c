/**
 * `longrun codec-server`: the codec server (codec/server.ts) with the keys from LONGRUN_ENCRYPTION_KEYS or
 * LONGRUN_ENCRYPTION_KEYS_FILE, until Ctrl-C or SIGTERM. Point the Temporal UI at it (`TEMPORAL_CODEC_ENDPOINT`,
 * or `temporal server start-dev --ui-codec-endpoint`) and the temporal CLI (`--codec-endpoint`): docs/encryption.md.
 * Its flags (`--port`, `--host`, `--origins`, `--namespaces`) are in the CLI's table, commands/cli/table.ts.
 */
import { EncryptionCodec } from '../codec/payload-codec.ts';
import { Keyring } from '../codec/keys.ts';
import { startCodecServer } from '../codec/server.ts';
import type { Settings } from '../config/settings.ts';
import { loadTemporalTarget } from '../config/temporal.ts';
import { LOOPBACK } from '../stack/ports.ts';

export interface CodecServerCommand {
  settings: Settings;
  port?: number;
  host?: string;
  origins?: string[];
  namespaces?: string[];
  log: (line: string) => void;
  /** Settles when the server should stop (default: the first SIGINT or SIGTERM). */
  stop?: Promise<unknown>;
}

export async function runCodecServer(options: CodecServerCommand): Promise<void> {
  const { settings, log } = options;
  const keys = settings.encryptionKeys;
  const origins = options.origins?.length
    ? options.origins
    : settings.codecServer.origins.length
      ? settings.codecServer.origins
      : [`http://${LOOPBACK}:${settings.ports.temporalUi}`, `http://localhost:${settings.ports.temporalUi}`];
  const namespaces = options.namespaces?.length ? options.namespaces : [loadTemporalTarget().namespace];
  const server = await startCodecServer({
    codec: new EncryptionCodec(keys ?? new Keyring([], 'LONGRUN_ENCRYPTION_KEYS or LONGRUN_ENCRYPTION_KEYS_FILE')),
    namespaces,
    origins,
    host: options.host ?? LOOPBACK,
    port: options.port ?? settings.codecServer.port,
    ...(settings.codecServer.authorization ? { authorization: settings.codecServer.authorization } : {}),
  });
  log(`[codec] listening on ${server.url} (POST /encode, /decode) for namespace ${namespaces.join(', ')}`);
  log(`[codec] browsers allowed from ${origins.join(', ')}`);
  log(
    keys
      ? `[codec] keys ${keys.keys.map((k) => k.id).join(', ')} (new payloads: ${keys.newest!.id})`
      : '[codec] no keys (LONGRUN_ENCRYPTION_KEYS is not set): payloads pass through as they are',
  );
  if (settings.codecServer.authorization) log('[codec] requests must carry the Authorization header set');
  try {
    await (options.stop ?? firstStopSignal());
  } finally {
    await server.close();
    log('[codec] stopped');
  }
}

function firstStopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve(signal);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}
