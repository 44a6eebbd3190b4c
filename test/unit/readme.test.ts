/**
 * The README is the front door: at most 200 lines, with "## Run and test" on its first two screens (a screen taken as
 * 50 lines); the detail lives in docs/. Every relative link of the README and of docs/*.md reaches a file that exists,
 * and a link to a heading of a Markdown file reaches a heading there (GitHub's anchors).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../config/settings.ts';

const README_MAX_LINES = 200;
const RUN_AND_TEST_BY_LINE = 100;

const read = (path: string) => readFileSync(join(PROJECT_ROOT, path), 'utf8');
/** The text without its code blocks and code spans, where a `](…)` is not a link. */
const prose = (text: string) => text.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as hyphens; a repeat gets -1, -2 … */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, heading] of text.replace(/```[\s\S]*?```/g, '').matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = heading!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replaceAll(' ', '-');
    const repeats = seen.get(slug) ?? 0;
    seen.set(slug, repeats + 1);
    anchors.add(repeats === 0 ? slug : `${slug}-${repeats}`);
  }
  return anchors;
}

describe('README.md', () => {
  const lines = read('README.md').split('\n');
  const count = lines.at(-1) === '' ? lines.length - 1 : lines.length;

  it(`has at most ${README_MAX_LINES} lines`, () => {
    expect(count, 'README.md is the front door: move detail into docs/').toBeLessThanOrEqual(README_MAX_LINES);
  });

  it(`has its "## Run and test" within the first ${RUN_AND_TEST_BY_LINE} lines`, () => {
    const line = lines.indexOf('## Run and test') + 1;
    expect(line, 'README.md has a "## Run and test" heading').toBeGreaterThan(0);
    expect(line).toBeLessThanOrEqual(RUN_AND_TEST_BY_LINE);
  });
});

describe('the links of README.md and docs/', () => {
  const pages = ['README.md', ...readdirSync(join(PROJECT_ROOT, 'docs')).filter((name) => name.endsWith('.md'))];
  const files = pages.map((name) => (name === 'README.md' ? name : `docs/${name}`));

  it.each(files)('%s: every relative link reaches a file, and a heading when it names one', (file) => {
    const broken: string[] = [];
    for (const [, href] of prose(read(file)).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/i.test(href!)) continue; // http:, https:, mailto:
      const [path, anchor] = href!.split('#');
      const target = path ? join(dirname(file), path) : file;
      if (!existsSync(join(PROJECT_ROOT, target))) broken.push(`${href}: no file ${target}`);
      else if (anchor && target.endsWith('.md') && !anchorsOf(read(target)).has(anchor)) {
        broken.push(`${href}: no heading #${anchor} in ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
