/**
 * docs/cli.md's command table, made from the CLI's table (commands/cli/table.ts) and laid out as Prettier lays out
 * the file. `node test/support/cli-docs.ts` writes it into docs/cli.md (Node 22.18 or later, as every script here);
 * test/unit/cli-flags.test.ts fails while the doc says something else.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { docsTable } from '../../commands/cli/help.ts';
import { COMMANDS } from '../../commands/cli/table.ts';

export const CLI_DOC = join(PROJECT_ROOT, 'docs/cli.md');
const BEGIN = '<!-- The command table, made from commands/cli/table.ts: node test/support/cli-docs.ts -->';
const END = '<!-- end of the command table -->';

/** The table as docs/cli.md must hold it. */
export async function generatedTable(): Promise<string> {
  const options = (await resolveConfig(CLI_DOC)) ?? {};
  return (await format(docsTable(COMMANDS), { ...options, parser: 'markdown' })).trim();
}

/** The table docs/cli.md holds (between its two markers), or undefined when the markers are not there. */
export function documentedTable(doc: string): string | undefined {
  const begin = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  return begin < 0 || end < begin ? undefined : doc.slice(begin + BEGIN.length, end).trim();
}

if (import.meta.main) {
  const doc = readFileSync(CLI_DOC, 'utf8');
  if (documentedTable(doc) === undefined) throw new Error(`${CLI_DOC} has no markers: ${BEGIN} … ${END}`);
  const table = await generatedTable();
  writeFileSync(
    CLI_DOC,
    `${doc.slice(0, doc.indexOf(BEGIN) + BEGIN.length)}\n\n${table}\n\n${doc.slice(doc.indexOf(END))}`,
  );
  console.log(`${CLI_DOC}: the command table written`);
}
