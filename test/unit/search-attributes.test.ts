/**
 * The commands that register longrun's search attributes are written in one place (config/search-attributes.ts, what
 * a worker's start error prints): docs/operations.md shows them as it writes them, and docker compose registers the
 * same names and types.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createCommands } from '../../config/search-attributes.ts';
import { SEARCH_ATTRIBUTE_TYPES } from '../../contract/search-attributes.ts';
import { AGENT_STATUS_VALUES } from '../../contract/state.ts';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

describe("longrun's search attributes", () => {
  it('docs/operations.md shows the commands as the worker prints them', () => {
    const block = /## A Temporal server of your own[\s\S]*?```sh\n([\s\S]*?)```/.exec(read('docs/operations.md'));
    expect(block, 'the section and its sh block').not.toBeNull();
    expect(block![1]!.trim().split('\n')).toEqual(createCommands('default'));
  });

  it('docs/temporal-ui.md lists every value of AgentStatus', () => {
    const text = read('docs/temporal-ui.md').replace(/\s+/g, ' ');
    const sentence = /`AgentStatus` is (.*?) or `closed`;/.exec(text);
    expect(sentence, 'the sentence that lists the values').not.toBeNull();
    const listed = [...`${sentence![1]} \`closed\``.matchAll(/`([a-z-]+)`/g)].map((m) => m[1]!);
    expect(listed.filter((value) => !value.includes(' ')).sort()).toEqual([...AGENT_STATUS_VALUES].sort());
  });

  it('docker compose registers each one with its type', () => {
    const list = /for attribute in ([^;]+);/.exec(read('docker-compose.yml'));
    expect(list, "compose's loop over the attributes").not.toBeNull();
    const pairs = list![1]!
      .trim()
      .split(/\s+/)
      .map((pair) => pair.split('=') as [string, string]);
    const registered: Record<string, string> = Object.fromEntries(pairs);
    expect(registered).toEqual(SEARCH_ATTRIBUTE_TYPES);
  });
});
