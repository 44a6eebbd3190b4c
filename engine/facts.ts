/**
 * Must-keep facts: a deterministic extractor of what a summary of removed messages must not lose (file paths, URLs,
 * identifiers, numbers with units, error signatures, and the user's constraints), a check of which of them a new
 * summary (or the task ledger) still holds, and the preserved-facts block that pins the missing ones verbatim.
 */

import type { MessageContent } from './messages.ts';
import { textOf } from './messages.ts';
import { clipLine } from './text.ts';

export type FactKind = 'path' | 'url' | 'identifier' | 'quantity' | 'error' | 'constraint';

export interface Fact {
  kind: FactKind;
  text: string;
  /** Said by the user (not found in a tool result or a reply): pinned first. */
  fromUser?: boolean;
  /** In the arguments of the agent's own tool calls (a file it edited, a command it ran): first of its kind. */
  fromAgent?: boolean;
}

export interface FactSource {
  role: string;
  /** Text, or parts: the facts are read from the text parts. */
  content: MessageContent;
  /** An assistant's tool calls: their arguments name the files it edits, the commands it runs. */
  tool_calls?: readonly { function: { arguments: string } }[];
}

/** The arguments of a message's tool calls as text (JSON unescaped): what the agent did. */
function actionText(message: FactSource): string {
  return (message.tool_calls ?? [])
    .map((call) => {
      try {
        const args = JSON.parse(call.function.arguments) as unknown;
        return typeof args === 'object' && args !== null ? Object.values(args).map(String).join('\n') : String(args);
      } catch {
        return call.function.arguments;
      }
    })
    .join('\n');
}

/** Longest fact kept (an error line or a constraint sentence is cut here). */
export const MAX_FACT_CHARS = 200;

const URL = /\bhttps?:\/\/[^\s<>"'`)\]]+/g;
// Unix paths with at least two segments or an extension, ~/ and ./ forms, and Windows paths.
const PATH =
  /(?:~|\.{1,2})?\/?(?:[\w.@-]+\/)+[\w.@-]+|\b[A-Za-z]:\\(?:[\w. -]+\\)*[\w. -]+|\b[\w-]+\.(?:ts|tsx|js|mjs|cjs|py|go|rs|java|kt|rb|json|ya?ml|toml|md|txt|sql|sh|css|html|csv|lock|env|ini|cfg|conf)\b/g;
const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
const HASH = /\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b/g;
const TICKET = /\b[A-Z][A-Z0-9]{1,9}-\d{1,6}\b|(?<![\w&])#\d{1,7}\b/g;
const QUANTITY =
  /(?<![\w.])[-+]?\d+(?:[.,]\d+)*\s?(?:ms|s|sec|secs|seconds?|min|minutes?|h|hrs?|hours?|days?|weeks?|KB|MB|GB|TB|KiB|MiB|GiB|TiB|B|bytes?|%|px|pt|em|rem|tokens?|km|m|cm|mm|kg|g|°C|°F|€|USD|EUR|\$|rpm|rps|qps|req\/s)(?![\w])/g;
const ERROR_LINE =
  /^.*(?:\b[A-Z]\w*(?:Error|Exception)\b|\b[Ee]rror:|\bE[A-Z]{3,}\b|\bHTTP [45]\d\d\b|\bexit (?:code|status) \d+|\bpanic:|Traceback \(most recent call last\)|\bFAIL(?:ED)?\b|\bfatal:).*$/gm;
const CONSTRAINT = /\b(?:must|never|always|don't|do not|should not|shouldn't|mustn't|cannot|can't|required|only)\b/i;

function clip(text: string): string {
  return clipLine(text, MAX_FACT_CHARS);
}

function matches(pattern: RegExp, text: string): string[] {
  return [...text.matchAll(pattern)].map((match) => match[0].replace(/[.,;:!?]+$/, ''));
}

/** Sentences of a user message that state a constraint ("must", "never", "don't", "always", …); not error lines. */
function constraints(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+|\n+/)
    .filter((sentence) => CONSTRAINT.test(sentence) && !new RegExp(ERROR_LINE.source, 'm').test(sentence))
    .map(clip);
}

/** Every fact of the messages, deduplicated, in order of first appearance. */
export function extractFacts(messages: readonly FactSource[]): Fact[] {
  const facts: Fact[] = [];
  const seen = new Set<string>();
  let fromUser = false;
  let fromAgent = false;
  const add = (kind: FactKind, text: string) => {
    const key = `${kind}:${text}`;
    if (text.length < 2) return;
    if (seen.has(key)) {
      const fact = facts.find((f) => f.kind === kind && f.text === text)!;
      if (fromUser) fact.fromUser = true;
      if (fromAgent) fact.fromAgent = true;
      return;
    }
    seen.add(key);
    facts.push({ kind, text, ...(fromUser ? { fromUser } : {}), ...(fromAgent ? { fromAgent } : {}) });
  };
  const sources = messages.flatMap((message) => [
    { message, text: textOf(message.content), action: false },
    ...(message.tool_calls?.length ? [{ message, text: actionText(message), action: true }] : []),
  ]);
  for (const { message, text, action } of sources) {
    fromUser = message.role === 'user';
    fromAgent = action;
    const urls = matches(URL, text);
    for (const url of urls) add('url', url);
    const withoutUrls = urls.reduce((rest, url) => rest.replaceAll(url, ' '), text);
    for (const path of matches(PATH, withoutUrls)) if (/[/\\.]/.test(path)) add('path', path);
    for (const id of [...matches(UUID, text), ...matches(HASH, text), ...matches(TICKET, text)]) add('identifier', id);
    for (const quantity of matches(QUANTITY, text)) add('quantity', quantity);
    // An error line verbatim, its closing punctuation included (only the ends' spaces go).
    for (const match of text.matchAll(ERROR_LINE)) add('error', clip(match[0].trim()));
    if (message.role === 'user') for (const sentence of constraints(text)) add('constraint', sentence);
  }
  return facts;
}

const normalize = (text: string) => text.toLowerCase().replace(/\s+/g, ' ').trim();
/** Words that carry no content of their own in a constraint (its modal may be paraphrased away). */
const FILLER = new Set([
  'must',
  'never',
  'always',
  'should',
  'shouldn',
  'mustn',
  'cannot',
  'required',
  'only',
  'that',
  'this',
  'with',
  'your',
  'from',
  'have',
  'keep',
  'make',
  'sure',
]);
/** Content words, cut to a 5-letter stem so that "touch" matches "touching". */
const stems = (text: string) =>
  (normalize(text).match(/[\p{L}\p{N}]{4,}/gu) ?? []).filter((w) => !FILLER.has(w)).map((w) => w.slice(0, 5));

/** Share of a constraint's content words (stems) that must appear for a paraphrase to count. */
export const CONSTRAINT_WORDS_FOUND = 0.6;

/**
 * Which facts `kept` (the new summary, and the task ledger) still holds: verbatim (case and spacing aside), or for
 * a constraint, a paraphrase that keeps most of its content words.
 */
export function checkFacts(facts: readonly Fact[], kept: string): { found: Fact[]; missing: Fact[] } {
  const haystack = normalize(kept);
  const vocabulary = new Set(stems(kept));
  const found: Fact[] = [];
  const missing: Fact[] = [];
  for (const fact of facts) {
    let present = haystack.includes(normalize(fact.text));
    if (!present && fact.kind === 'constraint') {
      const own = stems(fact.text);
      present = own.length > 0 && own.filter((w) => vocabulary.has(w)).length / own.length >= CONSTRAINT_WORDS_FOUND;
    }
    (present ? found : missing).push(fact);
  }
  return { found, missing };
}

/** The block appended to a summary to pin facts it lost, verbatim. */
export function preservedFactsBlock(missing: readonly Fact[]): string {
  if (missing.length === 0) return '';
  return [
    '## Preserved facts (verbatim from the removed messages)',
    ...missing.map((f) => `- ${f.kind}: ${f.text}`),
  ].join('\n');
}

/** Kinds in the order they are worth pinning when there are too many: the user's rules and errors first. */
const PIN_ORDER: readonly FactKind[] = ['constraint', 'error', 'path', 'url', 'identifier', 'quantity'];

/** The facts of the agent's own actions first, each part in its order. */
export function agentFirst(facts: readonly Fact[]): Fact[] {
  return [...facts.filter((f) => f.fromAgent), ...facts.filter((f) => !f.fromAgent)];
}

/**
 * At most `max` facts: the user's own first, then the most valuable kinds, those of the agent's own actions first
 * within a kind (the files it edited before the paths a search listed), each in order of appearance.
 */
export function prioritizeFacts(facts: readonly Fact[], max: number): Fact[] {
  const byKind = (from: readonly Fact[]) =>
    PIN_ORDER.flatMap((kind) => agentFirst(from.filter((f) => f.kind === kind)));
  return [...byKind(facts.filter((f) => f.fromUser)), ...byKind(facts.filter((f) => !f.fromUser))].slice(0, max);
}
