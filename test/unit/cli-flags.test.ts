/**
 * The CLI's command table (commands/cli/table.ts): a flag a command does not take is a usage error, found before
 * anything connects; input the workflow would refuse is refused before it is sent (exit 2); the help and
 * docs/cli.md's table are made from the table, and the doc says what the table says.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run, UsageError } from '../../commands/cli/main.ts';
import { FLAGS, synopsis } from '../../commands/cli/parse.ts';
import { commandHelp } from '../../commands/cli/help.ts';
import type { Command } from '../../commands/cli/parse.ts';
import { COMMANDS } from '../../commands/cli/table.ts';
import { CLI_DOC, documentedTable, generatedTable } from '../support/cli-docs.ts';

/** What `longrun …argv` prints, and its exit code. */
async function printed(...argv: string[]): Promise<{ code: number; text: string }> {
  const lines: string[] = [];
  const code = await run(argv, (line) => lines.push(line));
  return { code, text: lines.join('\n') };
}

const TABLE: [string, Command][] = Object.entries(COMMANDS);

describe('longrun flags', () => {
  it('shows a required flag bare in the usage line and the docs, and refuses a line without it before running', async () => {
    expect(commandHelp('revert', COMMANDS.revert).split('\n')[0]).toBe(
      'Usage: longrun revert <agent> --to-event N [--json]',
    );
    expect(synopsis('revert', COMMANDS.revert)).toBe('revert <agent> --to-event N');
    await expect(run(['revert', 'trip'], () => {})).rejects.toThrow(
      new UsageError('revert: missing --to-event N (the event to go back before)'),
    );
    for (const [name, command] of Object.entries(COMMANDS) as [string, Command][]) {
      for (const flag of command.required ?? []) expect(command.flags, `${name} --${flag}`).toHaveProperty(flag);
    }
  });

  it('rejects a flag the command does not take, naming the command and its own flags', async () => {
    await expect(run(['list', '--preset', 'x'])).rejects.toThrow(
      new UsageError('list: --preset is not an option of this command (its options: --json)'),
    );
    await expect(run(['state', 'a1', '--window', '9', '--since', '2'])).rejects.toThrow(
      'state: --window, --since is not an option of this command (its options: --json)',
    );
    await expect(run(['chat', 'a1', '--json'])).rejects.toThrow(
      'chat: --json is not an option of this command (its options: none)',
    );
    await expect(run(['frobnicate', 'a1'])).rejects.toThrow('unknown command "frobnicate"');
    await expect(run(['up', '--bogus'])).rejects.toThrow(
      new UsageError("up: Unknown option '--bogus' (its options: --once, --no-demo, --cluster)"),
    );
  });

  it('start --approve-tools: names separated by commas; its timeout flags go with it, each checked', async () => {
    await expect(run(['start', 'a1', '--approve-tools', 'deploy,,x'])).rejects.toThrow(
      new UsageError('--approve-tools: must be tool names separated by commas (got "deploy,,x")'),
    );
    await expect(run(['start', 'a1', '--approval-timeout', '60'])).rejects.toThrow(
      new UsageError('--approval-timeout goes with --approve-tools NAME[,NAME]'),
    );
    await expect(run(['start', 'a1', '--approve-tools', 'deploy', '--on-approval-timeout', 'maybe'])).rejects.toThrow(
      new UsageError('--on-approval-timeout: must be deny or approve (got "maybe")'),
    );
    await expect(run(['start', 'a1', '--approve-tools', 'deploy', '--approval-timeout', '0'])).rejects.toThrow(
      '--approval-timeout',
    );
    await expect(
      run(['start', 'a1', '--approve-tools', 'deploy', '--approval-timeout', String(31 * 86_400)]),
    ).rejects.toThrow('2592000');
  });

  it('refuses --reopen with any setting of a new agent, naming each one given', async () => {
    await expect(run(['start', 'a1', '--reopen', '--background', '0.6', '--model', 'm'])).rejects.toThrow(
      new UsageError('--reopen continues the agent as it was: it cannot go with --model, --background'),
    );
  });

  it('refuses an argument more than the command takes, with its usage line; a variadic last argument takes the rest', async () => {
    await expect(run(['state', 'a1', 'a2'])).rejects.toThrow(
      new UsageError('state: unexpected argument "a2" (usage: longrun state <agent>)'),
    );
    await expect(run(['approve', 'a1', 'draft-1', '--summary-file', 'f', 'extra'])).rejects.toThrow(
      new UsageError('approve: unexpected argument "extra" (usage: longrun approve <agent> <draft>)'),
    );
    await expect(run(['list', 'x'.repeat(500)])).rejects.toThrow(
      /^list: unexpected argument "x{64}…" \(500 characters\)/,
    );
    for (const [name, command] of TABLE) {
      if (command.args.at(-1)?.variadic) continue;
      const argv = [name, ...command.args.map((arg) => (arg.name === 'draft' ? 'draft-1' : 'a1')), 'one-more'];
      await expect(run(argv), name).rejects.toThrow(`${name}: unexpected argument "one-more"`);
    }
  });

  it('a file it cannot read (--summary-file, a recording to replay) is a usage error naming the file and why', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cli-files-'));
    const missing = join(dir, 'summary.md');
    await expect(run(['approve', 'a1', 'draft-1', '--summary-file', missing])).rejects.toThrow(
      new UsageError(`--summary-file: cannot read ${missing}: no such file`),
    );
    await expect(run(['replay', dir])).rejects.toThrow(new UsageError(`replay: cannot read ${dir}: it is a folder`));
    await rm(dir, { recursive: true });
  });

  it('--version prints the package version and exits 0', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    for (const flag of ['--version', '-v'])
      expect(await printed(flag)).toEqual({ code: 0, text: `longrun ${version}` });
    expect((await printed('help')).text).toContain('--version');
  });

  it('names a missing argument, with what it is', async () => {
    await expect(run(['send', 'a1'])).rejects.toThrow(new UsageError('send: missing <text>'));
    await expect(run(['approve', 'a1'])).rejects.toThrow(
      new UsageError('approve: missing <draft> (the id compact --review printed)'),
    );
  });
});

describe('longrun refuses before sending what the workflow would refuse for its shape or size (exit 2)', () => {
  it('approve and discard: a draft id that is not one; approve: an edited summary, empty or too long', async () => {
    await expect(run(['approve', 'a1', 'nope'])).rejects.toThrow(
      new UsageError('draft: must be a draft id like "draft-1" (got "nope")'),
    );
    await expect(run(['discard', 'a1', 'draft-x'])).rejects.toThrow(
      new UsageError('draft: must be a draft id like "draft-1" (got "draft-x")'),
    );
    const files = await mkdtemp(join(tmpdir(), 'cli-flags-'));
    const huge = join(files, 'huge.txt');
    await writeFile(huge, 'x'.repeat(200_001));
    await expect(run(['approve', 'a1', 'draft-1', '--summary-file', huge])).rejects.toThrow(
      new UsageError('summary: 200001 characters is over the limit of 200000'),
    );
    const blank = join(files, 'blank.txt');
    await writeFile(blank, ' \n');
    await expect(run(['approve', 'a1', 'draft-1', '--summary-file', blank])).rejects.toThrow(
      new UsageError('summary: must be a non-empty string (the edited summary)'),
    );
  });

  it('compact --review: instructions over their limit', async () => {
    await expect(run(['compact', 'a1', '--review', '--instructions', 'x'.repeat(4_001)])).rejects.toThrow(
      new UsageError('instructions: 4001 characters is over the limit of 4000'),
    );
  });
});

describe('the table, the help and docs/cli.md', () => {
  it('every flag of a command is a flag of the CLI, and every flag of the CLI is some command’s', () => {
    const used = new Set(TABLE.flatMap(([, command]) => Object.keys(command.flags)));
    for (const flag of used) expect(FLAGS, flag).toHaveProperty([flag]);
    expect([...used].sort()).toEqual(Object.keys(FLAGS).sort());
    for (const [name, command] of TABLE) {
      expect(command.summary.length, name).toBeGreaterThan(10);
      for (const [flag, help] of Object.entries(command.flags))
        expect(help.length, `${name} --${flag}`).toBeGreaterThan(5);
    }
  });

  it('longrun help lists every command; no command is usage (exit 2)', async () => {
    const help = await printed('help');
    expect(help.code).toBe(0);
    for (const [name, command] of TABLE) expect(help.text, name).toContain(command.summary.slice(0, 30));
    expect(help.text).toContain('Exit codes: 0 ok, 1 error, 2 bad usage');
    expect((await printed()).code).toBe(2);
    expect((await printed('--help')).text).toBe(help.text);
  });

  it('longrun <command> --help and longrun help <command>: the usage line and every flag with its value', async () => {
    for (const [name, command] of TABLE) {
      const help = await printed(name, '--help');
      expect(help.code, name).toBe(0);
      expect(help.text, name).toMatch(new RegExp(`^Usage: longrun ${name}\\b`));
      for (const flag of Object.keys(command.flags) as (keyof typeof FLAGS)[]) {
        const value: string | undefined = (FLAGS[flag] as { value?: string }).value;
        expect(help.text, `${name} --${flag}`).toContain(value ? `--${flag} ${value}` : `--${flag}`);
      }
      expect((await printed('help', name)).text).toBe(help.text);
    }
    const start = (await printed('start', '--help')).text;
    expect(start).toContain('[--on-review-timeout apply|discard]');
    expect(start).toMatch(/--max-steps N +the turn budget: model calls per message \(default 500, at most 1,000,000\)/);
    await expect(run(['help', 'frobnicate'])).rejects.toThrow('unknown command "frobnicate"');
  });

  it("docs/cli.md holds the command table as the CLI's table makes it (test/support/cli-docs.ts)", async () => {
    const documented = documentedTable(readFileSync(CLI_DOC, 'utf8'));
    expect(documented, 'docs/cli.md has the markers of the command table').toBeDefined();
    expect(documented, 'docs/cli.md is stale: run node test/support/cli-docs.ts').toBe(await generatedTable());
  });
});
