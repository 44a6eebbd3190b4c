/** The CLI's command table: a flag a command does not take is a usage error, found before anything connects. */
import { describe, expect, it } from 'vitest';
import { run, UsageError } from '../../commands/cli.ts';

describe('longrun flags', () => {
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
  });

  it('refuses --reopen with any setting of a new agent, naming each one given', async () => {
    await expect(run(['start', 'a1', '--reopen', '--background', '0.6', '--model', 'm'])).rejects.toThrow(
      new UsageError('--reopen continues the agent as it was: it cannot go with --model, --background'),
    );
  });
});
