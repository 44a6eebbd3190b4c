/**
 * How the `longrun` CLI reads a command line against its table (table.ts): the flags every command draws from, a
 * command's own flags and arguments, and the mistakes that are usage errors (exit 2), found before anything connects.
 */
import { MAX_PRICE_PER_MILLION } from '../../engine/pricing.ts';
import type { ModelPrice } from '../../engine/pricing.ts';
import type { PolicyOverrides } from '../../engine/policy.ts';
import { resolvePolicy } from '../../engine/presets.ts';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { Settings } from '../../config/settings.ts';
import { quoted } from '../../contract/inputs.ts';

/** The exit codes a script can trust (docs/cli.md). */
export const EXIT = { ok: 0, error: 1, usage: 2, unknownAgent: 3, closed: 4, interrupted: 130 } as const;

/** A usage mistake: exit code 2 with the message and a hint. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/**
 * The text of a file the user named (`--summary-file F`, a recording to replay): one that cannot be read is a
 * {@link UsageError} naming what it was for, the file and why (`--summary-file: cannot read notes.md: no such file`).
 */
export function readNamedFile(what: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    const why =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EISDIR'
          ? 'it is a folder'
          : code === 'EACCES'
            ? 'permission denied'
            : message;
    throw new UsageError(`${what}: cannot read ${path}: ${why}`);
  }
}

/** An outcome with a specific exit code. */
export class CliExit extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

/**
 * Every flag of every command: a switch, or a flag that takes a value (named as the help shows it). Which command
 * takes which, and what it means there, is the table's (table.ts).
 */
export const FLAGS = {
  json: {},
  'no-wait': {},
  wait: {},
  review: {},
  'if-due': {},
  'even-if-larger': {},
  reopen: {},
  once: {},
  'no-demo': {},
  cluster: {},
  model: { value: 'M' },
  system: { value: 'TEXT' },
  'max-steps': { value: 'N' },
  'max-turn-tokens': { value: 'N' },
  'max-turn-seconds': { value: 'N' },
  window: { value: 'TOKENS' },
  price: { value: 'IN,CACHED,OUT' },
  preset: { value: 'NAME' },
  background: { value: 'RATIO|off' },
  'await-review': { value: 'SECONDS' },
  'on-review-timeout': { value: 'apply|discard' },
  'approve-tools': { value: 'NAME[,NAME]' },
  'approval-timeout': { value: 'SECONDS' },
  'on-approval-timeout': { value: 'deny|approve' },
  instructions: { value: 'TEXT' },
  strategy: { value: 'NAME' },
  since: { value: 'SEQ' },
  limit: { value: 'N' },
  interval: { value: 'MS' },
  'expect-turn': { value: 'N' },
  'to-event': { value: 'N' },
  'summary-file': { value: 'F' },
  policy: { value: 'FILE' },
  port: { value: 'N' },
  host: { value: 'H' },
  origins: { value: 'A,B' },
  namespaces: { value: 'A,B' },
  text: { value: 'TEXT' },
  'pin-ratio': { value: 'RATIO' },
  'budget-note': { value: 'on|off' },
  'task-queue': { value: 'Q' },
  before: { value: 'TIME' },
} as const satisfies Record<string, { value?: string }>;

export type FlagName = keyof typeof FLAGS;
type SwitchName = { [K in FlagName]: (typeof FLAGS)[K] extends { value: string } ? never : K }[FlagName];

/** The flags as a command reads them: a switch is false unless given; a value is absent unless given. */
export type FlagValues = { readonly [K in SwitchName]: boolean } & {
  readonly [K in Exclude<FlagName, SwitchName>]?: string;
};

/** A command's argument, as its usage line shows it (`<agent>`). */
export interface Arg {
  name: string;
  /** The rest of the command line, joined by spaces (`<text...>`). */
  variadic?: true;
  /** May be left out (`[text...]`): only the last argument. */
  optional?: true;
  /** What the error for a missing one adds, in parentheses. */
  hint?: string;
  /** Refuses a value that is not one (throws), before the next argument is read. */
  check?: (value: string) => void;
}

/** What a command's handler is given: its arguments by name, its flags, the settings, and where output goes. */
export interface Invocation {
  args: Readonly<Record<string, string>>;
  values: FlagValues;
  /** The flags given on the command line, in the order the command lists them. */
  given: readonly FlagName[];
  settings: Settings;
  out: (line: string) => void;
}

/** A row of the CLI's table: everything the help, docs/cli.md and the parser know of a command. */
export interface Command {
  args: readonly Arg[];
  /** What it does, in a line: `longrun help` and docs/cli.md. */
  summary: string;
  /** More, for `longrun <command> --help` and docs/cli.md. */
  more?: string;
  /** The flags it takes, each with what it means for this command, in the order the help lists them. */
  flags: Partial<Record<FlagName, string>>;
  /**
   * Of those, the ones it cannot run without: its usage line shows them bare (not in brackets), and a command line
   * without one is refused before the command runs.
   */
  required?: readonly FlagName[];
  /** Runs it; resolves to the exit code. */
  run: (call: Invocation) => Promise<number>;
}

/** What a command line holds once read: the command's row, its arguments and flags. */
export interface CommandLine {
  command: Command;
  args: Record<string, string>;
  values: FlagValues;
  given: FlagName[];
}

/** The command's own flags, as usage errors list them. */
export function ownFlags(command: Command): string {
  const names = Object.keys(command.flags);
  return names.length ? names.map((f) => `--${f}`).join(', ') : 'none';
}

/** parseArgs' options: every flag of every command (a flag of another command is named as such, below). */
const OPTIONS = Object.fromEntries(
  Object.entries(FLAGS).map(([name, flag]) => [
    name,
    'value' in flag ? { type: 'string' as const } : { type: 'boolean' as const, default: false },
  ]),
);

/**
 * Reads `args` for the command `name` (its row `command`, undefined for a name the table does not have): a flag the
 * command does not take, an unknown one, or a missing argument is a {@link UsageError} naming the command's own flags.
 */
export function parseCommandLine(name: string, command: Command | undefined, args: string[]): CommandLine {
  let parsed;
  try {
    parsed = parseArgs({
      args: joinNegativeNumbers(args),
      allowPositionals: true,
      strict: true,
      options: OPTIONS,
      tokens: true,
    });
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code !== 'ERR_PARSE_ARGS_UNKNOWN_OPTION') throw error;
    if (!command) throw new UsageError(`unknown command ${JSON.stringify(name)}`);
    const option = /'(-[^']*)'/.exec((error as Error).message)?.[1] ?? '';
    throw new UsageError(`${name}: Unknown option '${option}' (its options: ${ownFlags(command)})`);
  }
  if (!command) throw new UsageError(`unknown command ${JSON.stringify(name)}`);
  const given = new Set(parsed.tokens.flatMap((token) => (token.kind === 'option' ? [token.name] : [])));
  const foreign = [...given].filter((flag) => !(flag in command.flags));
  if (foreign.length > 0) {
    throw new UsageError(
      `${name}: ${foreign.map((f) => `--${f}`).join(', ')} is not an option of this command ` +
        `(its options: ${ownFlags(command)})`,
    );
  }
  const positional = commandArgs(name, command, parsed.positionals);
  const missing = command.required?.find((flag) => !given.has(flag));
  if (missing !== undefined) {
    throw new UsageError(`${name}: missing ${flagUsage(missing)} (${command.flags[missing]})`);
  }
  return {
    command,
    args: positional,
    values: parsed.values as FlagValues,
    given: (Object.keys(command.flags) as FlagName[]).filter((flag) => given.has(flag)),
  };
}

/** A flag as usage shows it: `--json`, `--window TOKENS`. */
export function flagUsage(name: FlagName): string {
  const flag: { value?: string } = FLAGS[name];
  return flag.value ? `--${name} ${flag.value}` : `--${name}`;
}

/**
 * A command's name, its arguments and its required flags, as its usage line shows them: `approve <agent> <draft>`,
 * `interrupt <agent> [text...]`, `revert <agent> --to-event N`.
 */
export function synopsis(name: string, command: Command): string {
  return [
    name,
    ...command.args.map((arg) => {
      const shown = `${arg.name}${arg.variadic ? '...' : ''}`;
      return arg.optional ? `[${shown}]` : `<${shown}>`;
    }),
    ...(command.required ?? []).map(flagUsage),
  ].join(' ');
}

/** The positionals by the command's argument names; a missing one, or one more than it takes, is a usage error. */
function commandArgs(name: string, command: Command, positionals: string[]): Record<string, string> {
  const args: Record<string, string> = {};
  command.args.forEach((arg, i) => {
    const value = arg.variadic ? positionals.slice(i).join(' ') : positionals[i];
    if (!value && arg.optional) return;
    if (!value) throw new UsageError(`${name}: missing <${arg.name}>${arg.hint ? ` (${arg.hint})` : ''}`);
    arg.check?.(value);
    args[arg.name] = value;
  });
  const extra = command.args.at(-1)?.variadic ? undefined : positionals[command.args.length];
  if (extra !== undefined) {
    throw new UsageError(`${name}: unexpected argument ${quoted(extra)} (usage: longrun ${synopsis(name, command)})`);
  }
  return args;
}

/**
 * `--limit -1` as `--limit=-1`: parseArgs takes a value that starts with a dash for an option ("argument is
 * ambiguous"); a number is a value, so the flag's own check can say what is allowed.
 */
export function joinNegativeNumbers(args: string[]): string[] {
  const joined: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const name = /^--([a-z-]+)$/.exec(args[i]!)?.[1];
    const next = args[i + 1];
    const takesValue = name !== undefined && 'value' in ((FLAGS as Record<string, object>)[name] ?? {});
    if (takesValue && next !== undefined && /^-\d/.test(next)) {
      joined.push(`--${name}=${next}`);
      i++;
    } else joined.push(args[i]!);
  }
  return joined;
}

/** An integer flag within [min, max], or a usage error naming the flag, the range and the value. */
/**
 * `--price IN,CACHED,OUT`: USD per million tokens of input, cached input and output; CACHED may be left empty
 * (`0.15,,0.6`: 0.1 × input). Exit 2 naming the flag for anything else.
 */
export function priceFlag(raw: string | undefined): ModelPrice | undefined {
  if (raw === undefined) return undefined;
  const parts = raw.split(',').map((part) => part.trim());
  const bad = () =>
    new UsageError(
      `--price: must be IN,CACHED,OUT, USD per million tokens from 0 to ${MAX_PRICE_PER_MILLION} ` +
        `(CACHED may be empty: 0.1 × IN), e.g. 0.15,0.075,0.6 (got ${JSON.stringify(raw)})`,
    );
  if (parts.length !== 3) throw bad();
  const number = (part: string) => {
    const value = Number(part);
    if (part === '' || !Number.isFinite(value) || value < 0 || value > MAX_PRICE_PER_MILLION) throw bad();
    return value;
  };
  return {
    inputPerMillion: number(parts[0]!),
    ...(parts[1] !== '' ? { cachedInputPerMillion: number(parts[1]!) } : {}),
    outputPerMillion: number(parts[2]!),
  };
}

/** A compaction policy as `--preset` and `--policy FILE` give it: the preset's name and the overrides on top of it. */
export interface PolicyChoice {
  preset: string;
  /** As the file gives them (its `preset` key taken out); empty without `--policy`. */
  overrides: PolicyOverrides;
}

/**
 * `--policy FILE`: a JSON object of policy overrides, as an agent's `compaction` setting takes them (`preset`
 * included). A file that cannot be read, is not JSON, not an object, or whose `preset` is not a string is a
 * {@link UsageError}; the fields are checked where a preset is put under them ({@link policyFlags}).
 */
export function readPolicyFile(file: string): PolicyOverrides & { preset?: string } {
  const text = readNamedFile('--policy', file);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--policy: ${file} is not JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    const kind = parsed === null ? 'null' : Array.isArray(parsed) ? 'an array' : `a ${typeof parsed}`;
    throw new UsageError(
      `--policy: ${file} must hold a JSON object of compaction policy overrides (docs/configuration.md), not ${kind}`,
    );
  }
  const { preset } = parsed as { preset?: unknown };
  if (preset !== undefined && typeof preset !== 'string') {
    throw new UsageError(`--policy: ${file}: "preset" must be a preset's name, not ${JSON.stringify(preset)}`);
  }
  return parsed;
}

/**
 * `--preset NAME` and `--policy FILE` ({@link readPolicyFile}) as one policy, validated whole before anything starts:
 * a file naming another preset than `--preset` is a {@link UsageError}, a bad field the policy's own `PolicyError`
 * (naming the field and its limit).
 */
export function policyFlags(preset: string | undefined, file: string | undefined): PolicyChoice {
  const { preset: named, ...overrides } = file === undefined ? {} : readPolicyFile(file);
  if (named !== undefined && preset !== undefined && named !== preset) {
    throw new UsageError(`--policy: ${file} names the preset ${named}, --preset ${preset}: give one, or the same`);
  }
  const chosen = preset ?? named ?? 'default';
  resolvePolicy({ ...overrides, preset: chosen });
  return { preset: chosen, overrides };
}

export function intFlag(name: FlagName, raw: string | undefined, min = 0, max = Infinity): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    const range = Number.isFinite(max) ? `from ${min} to ${max}` : `≥ ${min}`;
    throw new UsageError(`--${name}: must be an integer ${range} (got ${JSON.stringify(raw)})`);
  }
  return value;
}
