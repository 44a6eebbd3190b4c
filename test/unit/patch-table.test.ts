/** Every workflow patch id in the code has its row in docs/changing-workflows.md's table, and no row names a gone one. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

/** The ids given to `patched()`: every `..._PATCH = '<id>'` constant in workflows/ and its folders. */
function patchIdsInCode(): string[] {
  const dir = join(root, 'workflows');
  const ids: string[] = [];
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.ts'));
  for (const file of files) {
    const text = readFileSync(join(dir, file), 'utf8');
    for (const match of text.matchAll(/_PATCH = '([a-z0-9-]+)'/g)) ids.push(match[1]!);
    // A patch asked for by its literal id would escape the list above.
    expect(text, `${file} calls patched() with a literal id; name it in a *_PATCH constant`).not.toMatch(/patched\('/);
  }
  return ids.sort();
}

/** The ids in the table under "The patches in the code". */
function patchIdsInDocs(): string[] {
  const text = readFileSync(join(root, 'docs', 'changing-workflows.md'), 'utf8');
  const table = text.split('## The patches in the code')[1]!.split('\n\n')[1]!;
  return [...table.matchAll(/^\| `([a-z0-9-]+)`/gm)].map((match) => match[1]!).sort();
}

describe('the patch table in docs/changing-workflows.md', () => {
  it('lists every patch the workflow code asks for, and only those', () => {
    const inCode = patchIdsInCode();
    expect(inCode.length).toBeGreaterThan(10);
    expect(patchIdsInDocs()).toEqual(inCode);
  });
});
