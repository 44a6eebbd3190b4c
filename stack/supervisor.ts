/**
 * Runs one server as a child and ties its life to longrun's: when the parent's pipe on our stdin closes (the parent
 * exited, crashed, or was killed with -9), the server gets SIGTERM, then SIGKILL after a grace period.
 * We exit with the server's exit code. Started by `stack/process.ts` as
 * `node supervisor.ts [--stop-signal=SIG] <command> [args...]`; the server is asked to stop with SIGTERM, or SIG.
 */
import { spawn } from 'node:child_process';

const GRACE_MS = 5_000;
const argv = process.argv.slice(2);
const stopSignal = (argv[0]?.startsWith('--stop-signal=') ? argv.shift()!.slice(14) : 'SIGTERM') as NodeJS.Signals;
const [command, ...args] = argv;
if (!command) {
  console.error('usage: supervisor.ts [--stop-signal=SIG] <command> [args...]');
  process.exit(2);
}

const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit'] });
let stopping = false;

function stop(): void {
  if (stopping) return;
  stopping = true;
  child.kill(stopSignal);
  setTimeout(() => child.kill('SIGKILL'), GRACE_MS).unref();
}

child.on('error', (error) => {
  console.error(`supervisor: cannot start ${command}: ${error.message}`);
  process.exit(127);
});
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 : 1)));

// The parent holds the write end of our stdin; EOF means it is gone.
process.stdin.on('end', stop);
process.stdin.on('close', stop);
process.stdin.on('error', stop);
process.stdin.resume();
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, stop);
