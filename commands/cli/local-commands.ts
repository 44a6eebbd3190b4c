/**
 * The handlers of the commands that run something here rather than talk to an agent: the main job, a replay of a
 * recorded session, the codec server. Each loads its module only when it runs: the worker's native runtime and the
 * embedded stack are not for `longrun state` and the other client commands.
 */
import { parseOrigins } from '../../config/settings.ts';
import { EXIT, intFlag, policyFlags, priceFlag, UsageError } from './parse.ts';
import type { Invocation } from './parse.ts';

export async function up({ values, settings }: Invocation): Promise<number> {
  const { runMainJob } = await import('../main-job.ts');
  await runMainJob({ settings, once: values.once, demo: !values['no-demo'], cluster: values.cluster });
  return EXIT.ok;
}

export async function replay({ args, values, out }: Invocation): Promise<number> {
  // A bad preset or policy file: exit 2 before anything starts.
  const { preset, overrides } = policyFlags(values.preset, values.policy);
  const window = intFlag('window', values.window, 1);
  const price = priceFlag(values.price);
  const { runReplay } = await import('../replay.ts');
  const { renderReplay } = await import('../replay-report.ts');
  const report = await runReplay({
    file: args.recording!,
    preset,
    ...(values.policy !== undefined ? { policy: overrides } : {}),
    ...(window !== undefined ? { window } : {}),
    ...(price ? { price } : {}),
    log: (line) => console.error(line),
  });
  out(values.json ? JSON.stringify(report, null, 2) : renderReplay(report));
  return EXIT.ok;
}

export async function codecServer({ values, settings, out }: Invocation): Promise<number> {
  const port = intFlag('port', values.port, 1, 65_535);
  const origins = values.origins === undefined ? undefined : flagOrigins(values.origins);
  const namespaces = values.namespaces
    ?.split(',')
    .map((namespace) => namespace.trim())
    .filter(Boolean);
  const { runCodecServer } = await import('../codec-server.ts');
  await runCodecServer({
    settings,
    ...(port !== undefined ? { port } : {}),
    ...(values.host ? { host: values.host } : {}),
    ...(origins ? { origins } : {}),
    ...(namespaces ? { namespaces } : {}),
    log: out,
  });
  return EXIT.ok;
}

/** `--origins`: the browser origins, each checked as LONGRUN_CODEC_ORIGINS is. */
function flagOrigins(raw: string): string[] {
  try {
    return parseOrigins(raw, '--origins');
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** `longrun stream-server`: agents' live streams as Server-Sent Events, and the page that shows one (docs/streaming.md). */
export async function streamServer({ values, settings, out }: Invocation): Promise<number> {
  const port = intFlag('port', values.port, 0, 65_535);
  const [{ runStreamServer }, { connectClient, loadTemporalTarget }, { S3BlobStore, s3TargetFromEnv }] =
    await Promise.all([
      import('../stream-server.ts'),
      import('../../config/temporal.ts'),
      import('../../storage/s3.ts'),
    ]);
  const client = await connectClient(loadTemporalTarget());
  try {
    await runStreamServer({
      client,
      store: new S3BlobStore(s3TargetFromEnv(settings)),
      ...(port !== undefined ? { port } : {}),
      ...(values.host ? { host: values.host } : {}),
      log: out,
    });
  } finally {
    await client.connection.close();
  }
  return EXIT.ok;
}
