/**
 * The help the CLI prints and the command table of docs/cli.md, made from the commands' table (table.ts): `longrun
 * help` lists the commands, `longrun <command> --help` gives one with its flags.
 */
import { flagUsage, synopsis } from './parse.ts';
import type { Command, FlagName } from './parse.ts';

type Commands = Readonly<Record<string, Command>>;

/** How wide the help is, in characters. */
const WIDTH = 118;

const ABOUT = `Connection: TEMPORAL_ADDRESS (default 127.0.0.1:7233), TEMPORAL_NAMESPACE (default "default"),
TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE; AWS_ENDPOINT_URL_S3 and the AWS variables (default: the embedded
MinIO); LONGRUN_TASK_QUEUE, LONGRUN_MODEL, LONGRUN_S3_BUCKET.
Waiting (send, chat, steer, interrupt, compact, approve, discard, revert, approve-tool, deny-tool, close --wait):
progress on stderr after 3 s; nothing is sent until a worker polls the agent's task queue. LONGRUN_WORKER_TIMEOUT_MS (default 60000): how long to wait for a worker
before giving up (exit 1); LONGRUN_RECONNECT_TIMEOUT_MS (default 120000): how long to keep asking again, with the
same Update id, while Temporal cannot be reached.
Exit codes: 0 ok, 1 error, 2 bad usage (refused before anything is sent), 3 unknown agent, 4 agent closed.`;

/** Words (of `text`, or the given units) in lines of at most `width` characters (a longer one stands alone). */
function wrap(text: string | string[], width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of typeof text === 'string' ? text.split(/\s+/).filter(Boolean) : text) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  return line ? [...lines, line] : lines;
}

/** Rows of a term and its description, the descriptions in one column, wrapped. */
function columns(rows: [string, string][], indent = 2): string {
  const termWidth = Math.max(...rows.map(([term]) => term.length)) + 2;
  const pad = ' '.repeat(indent + termWidth);
  return rows
    .flatMap(([term, text]) => {
      const [first = '', ...rest] = wrap(text, WIDTH - indent - termWidth);
      return [`${' '.repeat(indent)}${term.padEnd(termWidth)}${first}`, ...rest.map((line) => pad + line)];
    })
    .join('\n');
}

/** `longrun help`: every command in a line, and what goes for all of them. */
export function overview(commands: Commands): string {
  const rows = Object.entries(commands).map(([name, command]): [string, string] => [
    synopsis(name, command),
    command.summary,
  ]);
  rows.push(['help [command]', 'this text, or a command’s with its flags (as longrun <command> --help)']);
  rows.push(['--version', 'the version of longrun']);
  return [
    'longrun — durable long-running LLM agents on Temporal',
    '',
    'Usage: longrun <command> [arguments] [flags]; longrun <command> --help lists its flags.',
    '',
    'Commands:',
    columns(rows),
    '',
    ABOUT,
  ].join('\n');
}

/** `longrun <command> --help`: its usage line, what it does, and each flag. */
export function commandHelp(name: string, command: Command): string {
  const required = new Set(command.required ?? []);
  const flags = (Object.keys(command.flags) as FlagName[]).filter((flag) => !required.has(flag)).map(flagUsage);
  const usage = wrap([`longrun ${synopsis(name, command)}`, ...flags.map((flag) => `[${flag}]`)], WIDTH - 7);
  const rows = Object.entries(command.flags).map(([flag, text]): [string, string] => [
    flagUsage(flag as FlagName),
    text,
  ]);
  return [
    `Usage: ${usage.join('\n       ')}`,
    '',
    ...wrap(command.summary, WIDTH),
    ...(command.more ? ['', ...wrap(command.more, WIDTH)] : []),
    ...(rows.length ? ['', 'Flags:', columns(rows)] : []),
  ].join('\n');
}

/** What a command does, in full: its summary and the more its help says. */
function described(command: Command): string {
  return command.more ? `${command.summary}. ${command.more}` : command.summary;
}

/**
 * docs/cli.md's table: a row per command (its arguments, what it does), then a row per flag. Markdown before
 * Prettier aligns it (test/support/cli-docs.ts).
 */
export function docsTable(commands: Commands): string {
  const cell = (text: string) => text.replaceAll('|', '\\|');
  const rows = Object.entries(commands).flatMap(([name, command]) => [
    `| \`${cell(synopsis(name, command))}\` | | ${cell(described(command))} |`,
    ...Object.entries(command.flags).map(
      ([flag, text]) => `| | \`${cell(flagUsage(flag as FlagName))}\` | ${cell(text)} |`,
    ),
  ]);
  return ['| command | flag | what it does |', '| --- | --- | --- |', ...rows].join('\n');
}
