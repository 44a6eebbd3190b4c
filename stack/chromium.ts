/**
 * Chromium for the browser test of the stream page (test/e2e/stream-page.test.ts): the OS's own build, driven by
 * `playwright-core` (which downloads no browser of its own).
 *
 * Where it comes from, in order: LONGRUN_CHROMIUM_BIN (a path to the program); `chromium` or `chromium-browser` on
 * PATH; otherwise the setup step installs Debian's `chromium` package with apt-get (as root), or says how to.
 *
 *   npm run chromium      # ensure it, on whatever Node the machine has (the stream page tests do so too)
 */
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { tailOfText } from './logs.ts';

export const CHROMIUM_BIN_VAR = 'LONGRUN_CHROMIUM_BIN';
const NAMES = ['chromium', 'chromium-browser'];

/** Thrown when Chromium cannot be found or installed; says what to do. */
export class ChromiumError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ChromiumError';
  }
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Chromium's program on this machine, or undefined. A LONGRUN_CHROMIUM_BIN that is not a program is an error. */
export function findChromium(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const explicit = env[CHROMIUM_BIN_VAR];
  if (explicit) {
    if (!isExecutableFile(explicit)) throw new ChromiumError(`${CHROMIUM_BIN_VAR}=${explicit} is not a program`);
    return explicit;
  }
  for (const dir of (env.PATH ?? '').split(delimiter).filter(Boolean)) {
    for (const name of NAMES) if (isExecutableFile(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

function run(command: string, args: string[], output: string[]): Promise<number | null> {
  const child = spawn(command, args, {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
}

/** Finds Chromium, installing Debian's `chromium` package when missing and allowed (root, apt-get). */
export async function ensureChromium(log: (line: string) => void = (line) => console.error(line)): Promise<string> {
  const found = findChromium();
  if (found) return found;
  const isRoot = process.getuid?.() === 0;
  const hasAptGet = spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status === 0;
  if (!isRoot || !hasAptGet) {
    throw new ChromiumError(
      [
        'Chromium is not installed; the stream page test drives it. Any one of these fixes it:',
        hasAptGet
          ? '  - sudo apt-get install chromium (longrun installs it itself when run as root);'
          : "  - install Chromium with your system's packages;",
        `  - set ${CHROMIUM_BIN_VAR} to a Chromium or Chrome program.`,
      ].join('\n'),
    );
  }
  log('[setup] Chromium is not installed; installing the chromium package with apt-get (first time only)');
  for (const args of [['update'], ['install', '-y', '--no-install-recommends', 'chromium']]) {
    const output: string[] = [];
    const code = await run('apt-get', args, output);
    if (code !== 0) {
      throw new ChromiumError(
        `apt-get ${args.join(' ')} failed (exit ${code}); Chromium is needed for the stream page test. Install it ` +
          `yourself, or set ${CHROMIUM_BIN_VAR}. Last lines of apt-get:\n${tailOfText(output.join(''), 15)}`,
      );
    }
  }
  const installed = findChromium();
  if (!installed) throw new ChromiumError('apt-get installed chromium, but no chromium program is on PATH');
  log(`[setup] Chromium: ${installed}`);
  return installed;
}

if (import.meta.main) {
  ensureChromium().then(
    (path) => console.error(`[setup] chromium: ${path}`),
    (error: unknown) => {
      console.error(error instanceof Error ? error.message : error);
      process.exit(1);
    },
  );
}
