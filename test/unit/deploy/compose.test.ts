/**
 * docker-compose.yml cannot run on a machine without a Docker engine, so this checks it against the code: every
 * variable it sets for the worker is one the code (or the library the code hands it to) reads, and ports, bucket,
 * namespace, task queue and search attributes agree with the defaults.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DEFAULTS, loadSettings, PROJECT_ROOT } from '../../../config/settings.ts';
import { DEFAULT_DYNAMIC_CONFIG } from '../../../stack/temporal.ts';
import {
  NAMESPACE_RETENTION_DAYS,
  schemaCommands,
  SERVER_CONFIG_FILE,
  temporalServerArgs,
  temporalServerEnv,
} from '../../../stack/cluster-config.ts';
import type { ClusterPorts } from '../../../stack/cluster-config.ts';
import { SEARCH_ATTRIBUTE_TYPES } from '../../../contract/search-attributes.ts';

interface Service {
  image?: string;
  build?: unknown;
  environment?: Record<string, string>;
  ports?: string[];
  command?: string | string[];
  volumes?: string[];
}
const compose = parse(readFileSync(join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
const services = compose.services;
const read = (path: string) => readFileSync(join(PROJECT_ROOT, path), 'utf8');

/** Where each family of variables is read: our own code, or the library our code leaves it to. */
const readers: Record<string, string> = {
  'our code': [
    'config/settings.ts',
    'config/temporal.ts',
    'config/tracing.ts',
    'storage/s3.ts',
    'llm/endpoint.ts',
    'worker/process.ts',
  ]
    .map(read)
    .join('\n'),
  '@temporalio/envconfig': read('node_modules/@temporalio/envconfig/lib/envconfig-toml.js'),
  openai: read('node_modules/openai/client.js'),
  '@aws-sdk/credential-provider-env': read('node_modules/@aws-sdk/credential-provider-env/dist-cjs/index.js'),
  '@smithy/core config': read('node_modules/@smithy/core/dist-cjs/submodules/config/index.js'),
  '@opentelemetry/resources': read('node_modules/@opentelemetry/resources/build/src/detectors/EnvDetectorSync.js'),
};

function whoReads(variable: string): string[] {
  const pattern = new RegExp(`\\b${variable}\\b`);
  return Object.entries(readers)
    .filter(([, text]) => pattern.test(text))
    .map(([name]) => name);
}

describe('docker-compose.yml', () => {
  const worker = services.worker!;

  it('builds the worker from the Dockerfile and pins every image tag', () => {
    expect(worker.build).toBe('.');
    for (const [name, service] of Object.entries(services)) {
      if (service.image) expect(service.image, name).toMatch(/:[\w.-]*\d[\w.-]*$/);
      if (service.image) expect(service.image, name).not.toMatch(/:latest$/);
    }
    expect(read('Dockerfile')).toMatch(/^FROM node:24\.\d+\.\d+/m);
    expect(read('Dockerfile')).toContain('--omit=dev');
  });

  it('copies every folder the build compiles into the build stage of the image', () => {
    const build = JSON.parse(read('tsconfig.build.json')) as { include: string[] };
    const copied = [...read('Dockerfile').matchAll(/^COPY (\S+) \1$/gm)].map((m) => m[1]);
    expect(build.include.filter((folder) => !copied.includes(folder))).toEqual([]);
  });

  it('sets only variables that the code reads', () => {
    const variables = Object.keys(worker.environment ?? {});
    expect(variables.length).toBeGreaterThan(5);
    for (const variable of variables) expect(whoReads(variable), `${variable} is read by nobody`).not.toEqual([]);
    // The ones longrun reads itself are read by our own code.
    for (const variable of variables.filter((v) => v.startsWith('LONGRUN_'))) {
      expect(whoReads(variable)).toContain('our code');
    }
  });

  it('agrees with the defaults: ports, bucket, namespace, task queue, credentials', () => {
    const env = worker.environment!;
    expect(env.TEMPORAL_ADDRESS).toBe(`temporal:${DEFAULTS.temporalPort}`);
    expect(env.TEMPORAL_NAMESPACE).toBe('default');
    expect(env.LONGRUN_S3_BUCKET).toBe(DEFAULTS.bucket);
    expect(env.LONGRUN_TASK_QUEUE).toBe(DEFAULTS.taskQueue);
    expect(env.AWS_ENDPOINT_URL_S3).toBe(`http://minio:${DEFAULTS.minioPort}`);
    expect(env.AWS_REGION).toBe(DEFAULTS.region);
    expect(services.temporal!.ports).toContain(`${DEFAULTS.temporalPort}:${DEFAULTS.temporalPort}`);
    expect(services['temporal-ui']!.ports).toContain('8080:8080');
    expect(services.minio!.ports).toContain(`${DEFAULTS.minioPort}:${DEFAULTS.minioPort}`);
    expect(services.minio!.environment).toMatchObject({
      MINIO_ROOT_USER: env.AWS_ACCESS_KEY_ID,
      MINIO_ROOT_PASSWORD: env.AWS_SECRET_ACCESS_KEY,
    });
    expect(String(services['minio-setup']!.command)).toContain(`local/${DEFAULTS.bucket}`);
  });

  it('runs the Temporal server with the dynamic config of the embedded one', () => {
    const file = read('deploy/temporal-dynamicconfig.yaml');
    const config = parse(file) as Record<string, { value: unknown }[]>;
    expect(Object.fromEntries(Object.entries(config).map(([key, values]) => [key, values[0]!.value]))).toEqual(
      DEFAULT_DYNAMIC_CONFIG,
    );
    expect((services.temporal as Service & { volumes: string[] }).volumes).toContain(
      './deploy/temporal-dynamicconfig.yaml:/etc/temporal/config/dynamicconfig/longrun.yaml:ro',
    );
  });

  it("points the UI's codec endpoint at the codec server, which has the worker's keys and allows the UI's origin", () => {
    const ui = services['temporal-ui']!;
    const codec = services['codec-server']!;
    const codecEnv = codec.environment!;
    expect(codec.build).toBe('.');
    expect(codec.command).toEqual(['node', 'dist/commands/cli.js', 'codec-server', '--host', '0.0.0.0']);
    // The browser calls it, so the endpoint is the published port on the host.
    expect(ui.environment!.TEMPORAL_CODEC_ENDPOINT).toBe(`http://localhost:${codecEnv.LONGRUN_CODEC_PORT}`);
    expect(codec.ports).toContain(`${codecEnv.LONGRUN_CODEC_PORT}:${codecEnv.LONGRUN_CODEC_PORT}`);
    const uiOrigin = `http://localhost:${ui.ports![0]!.split(':')[0]}`;
    expect(codecEnv.LONGRUN_CODEC_ORIGINS!.split(',')).toContain(uiOrigin);
    expect(codecEnv.TEMPORAL_NAMESPACE).toBe(worker.environment!.TEMPORAL_NAMESPACE);
    expect(codecEnv.LONGRUN_ENCRYPTION_KEYS).toBe('${LONGRUN_ENCRYPTION_KEYS:-}');
    expect(worker.environment!.LONGRUN_ENCRYPTION_KEYS).toBe(codecEnv.LONGRUN_ENCRYPTION_KEYS);
    for (const variable of Object.keys(codecEnv))
      expect(whoReads(variable), `${variable} is read by nobody`).not.toEqual([]);
    // The image copies dist/, where the CLI the command runs is built.
    expect(read('Dockerfile')).toContain('COPY --from=build /app/dist ./dist');
  });

  it('registers exactly the search attributes the workflow upserts', () => {
    const setup = String(services['temporal-setup']!.command);
    const registered = Object.fromEntries(
      [...setup.matchAll(/(Agent\w+)=(\w+)/g)].map((match) => [match[1]!, match[2]!] as const),
    );
    expect(registered).toEqual(SEARCH_ATTRIBUTE_TYPES);
  });

  it('sets up the namespace as cluster mode does: the same retention', () => {
    const setup = String(services['temporal-setup']!.command);
    expect(setup).toContain(`namespace create -n default --retention ${NAMESPACE_RETENTION_DAYS}d`);
  });

  it("scrapes the worker's metrics endpoint with Prometheus, and provisions Grafana with it and the dashboard", () => {
    const env = worker.environment!;
    // The worker serves on every interface of its container, at the port Prometheus scrapes.
    expect(loadSettings({ LONGRUN_METRICS_ADDRESS: env.LONGRUN_METRICS_ADDRESS }).metricsAddress).toBe('0.0.0.0:9464');
    const prometheus = services.prometheus!;
    expect((prometheus as Service & { volumes: string[] }).volumes).toContain(
      './deploy/prometheus.yml:/etc/prometheus/prometheus.yml:ro',
    );
    const scrape = parse(read('deploy/prometheus.yml')) as {
      scrape_configs: { job_name: string; metrics_path?: string; static_configs: { targets: string[] }[] }[];
    };
    const job = scrape.scrape_configs.find((config) => config.job_name === 'longrun-worker')!;
    expect(job.metrics_path ?? '/metrics').toBe('/metrics');
    expect(job.static_configs.flatMap((config) => config.targets)).toEqual([
      `worker:${env.LONGRUN_METRICS_ADDRESS!.split(':')[1]}`,
    ]);

    const grafana = services.grafana! as Service & { volumes: string[] };
    expect(grafana.volumes).toEqual(
      expect.arrayContaining([
        './deploy/grafana/provisioning:/etc/grafana/provisioning:ro',
        './deploy/grafana/dashboards:/var/lib/grafana/dashboards:ro',
      ]),
    );
    const sources = parse(read('deploy/grafana/provisioning/datasources/prometheus.yml')) as {
      datasources: { uid: string; type: string; url: string }[];
    };
    expect(sources.datasources).toEqual([
      expect.objectContaining({
        uid: 'prometheus',
        type: 'prometheus',
        url: `http://prometheus:${prometheus.ports![0]!.split(':')[1]}`,
      }),
    ]);
    const providers = parse(read('deploy/grafana/provisioning/dashboards/longrun.yml')) as {
      providers: { options: { path: string } }[];
    };
    expect(providers.providers.map((provider) => provider.options.path)).toEqual(['/var/lib/grafana/dashboards']);
    // Every panel queries the provisioned data source.
    const dashboard = JSON.parse(read('deploy/grafana/dashboards/longrun.json')) as {
      panels: { type: string; datasource?: { uid: string }; targets?: { datasource?: { uid: string } }[] }[];
    };
    for (const panel of dashboard.panels.filter((p) => p.type !== 'row')) {
      expect(panel.datasource?.uid).toBe('prometheus');
      for (const target of panel.targets ?? []) expect(target.datasource?.uid).toBe('prometheus');
    }
  });
});

describe('the Temporal server configuration shared by compose and cluster mode', () => {
  const template = read('deploy/temporal-server.yaml');
  const reads = new Set([...template.matchAll(/env "([A-Z_]+)"/g)].map((m) => m[1]!));
  const required = [...template.matchAll(/if not \(env "([A-Z_]+)"\)/g)].map((m) => m[1]!);
  const temporal = services.temporal!;

  it('is a template the server renders itself, naming in its header every variable it reads', () => {
    expect(template.split('\n')[0]).toBe('# enable-template');
    expect(required.sort()).toEqual(['POSTGRES_PWD', 'POSTGRES_SEEDS', 'POSTGRES_USER']);
    const header = template
      .split('\n')
      .filter((line) => line.startsWith('#'))
      .join('\n');
    for (const variable of reads) expect(header, variable).toContain(variable);
  });

  it("is the file compose's server runs with, from the environment compose gives it", () => {
    const command = String(temporal.command);
    const flag = (name: string) => new RegExp(`--${name} (\\S+)`).exec(command)?.[1];
    const mounted = `${flag('root')}/${flag('config')}/${flag('env')}.yaml`;
    expect(temporal.volumes).toContain(`./deploy/temporal-server.yaml:${mounted}:ro`);
    expect(command).toContain('--allow-no-auth start');
    const env = Object.keys(temporal.environment ?? {});
    for (const variable of env) expect(reads, `${variable} is read by nobody`).toContain(variable);
    for (const variable of required) expect(env).toContain(variable);
    // The one the entrypoint sets, as the image's own does when the server listens on every interface.
    expect(command).toContain('export TEMPORAL_BROADCAST_ADDRESS');
    expect(reads).toContain('TEMPORAL_BROADCAST_ADDRESS');
    expect(temporal.environment!.NUM_HISTORY_SHARDS).toBe(String(DEFAULTS.historyShards));
  });

  it('is the file cluster mode runs with, every variable it sets read by the template', () => {
    expect(SERVER_CONFIG_FILE).toBe(join(PROJECT_ROOT, 'deploy', 'temporal-server.yaml'));
    expect(temporalServerArgs('/data/temporal')).toEqual([
      '--root',
      '/data/temporal',
      '--config',
      'config',
      '--env',
      'temporal-server',
      '--allow-no-auth',
      'start',
    ]);
    const ports = Object.fromEntries(
      ['postgres', 'frontend', 'frontendHttp', 'frontendMembership', 'history', 'historyMembership', 'matching']
        .concat(['matchingMembership', 'worker', 'workerMembership', 'ui', 'minio', 'minioConsole'])
        .map((name, i) => [name, 20_000 + i]),
    ) as unknown as ClusterPorts;
    const env = temporalServerEnv({ ports, historyShards: 4, dynamicConfigFile: '/x.yaml' });
    for (const variable of Object.keys(env)) expect(reads, `${variable} is read by nobody`).toContain(variable);
    for (const variable of required) expect(Object.keys(env)).toContain(variable);
  });

  it("sets up the databases with the same idempotent steps as cluster mode, as compose's temporal-schema", () => {
    const script = String(services['temporal-schema']!.command);
    const steps = schemaCommands(5432).map((args) => args.slice(args.indexOf('--db') + 2).join(' '));
    expect(steps).toEqual([
      'create-database',
      'setup-schema -v 0.0',
      'update-schema --schema-name postgresql/v12/temporal',
      'create-database',
      'setup-schema -v 0.0',
      'update-schema --schema-name postgresql/v12/visibility',
    ]);
    expect(script).toContain('$$tool create-database');
    expect(script).toContain('$$tool setup-schema -v 0.0');
    expect(script).toContain('$$tool update-schema --schema-name "postgresql/v12/$$schema"');
    expect(script).not.toContain('|| true');
  });
});
