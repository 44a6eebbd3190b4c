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
  /** Messages it appears in (1 when absent): a file named again and again outranks one line of a listing. */
  mentions?: number;
  /** A path named with a line number (a traceback's frame, a compiler's `file:line:`): where something happened. */
  located?: boolean;
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
/** What follows a path named with its line: `:12`, `", line 12` (Python), `(12,5)` (tsc), `#L12`. */
const LINE_NUMBER_AFTER = /^(?::\d+|", line \d+|\(\d+,\d+\)|#L\d+)/;
const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
const HASH = /\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b/g;
const TICKET = /\b[A-Z][A-Z0-9]{1,9}-\d{1,6}\b|(?<![\w&])#\d{1,7}\b/g;
const QUANTITY =
  /(?<![\w.])[-+]?\d+(?:[.,]\d+)*\s?(?:ms|s|sec|secs|seconds?|min|minutes?|h|hrs?|hours?|days?|weeks?|KB|MB|GB|TB|KiB|MiB|GiB|TiB|B|bytes?|%|px|pt|em|rem|tokens?|km\/h|m\/s|mph|km|m|cm|mm|kg|g|°C|°F|€|USD|EUR|\$|rpm|rps|qps|req\/s)(?![\w])/g;
/** A unit with a slash (`km/h`, `MB/s`), which the path pattern takes for a path when it follows a number. */
const UNIT_AFTER_NUMBER = /^[A-Za-z]{1,5}\/[A-Za-z]{1,5}$/;
/**
 * A line that reports an error, as opposed to code or prose that names one (`raise ValueError(`, `except
 * TypeError:`, `print("Error:", e)` are not): an exception with its message (Python, JS, Java; pytest's `E   `
 * prefix), a traceback's first line, a compiler's or tool's `error:`/`fatal:`/`panic:` (after a `file:line:`
 * location), a log line at ERROR level, an errno, an HTTP 4xx/5xx, a non-zero exit, a test failure, a shell's
 * "command not found" and "No such file or directory". Tested on one line, bullets and labels taken off.
 */
const ERROR_PATTERNS: readonly RegExp[] = [
  /(?:^|\s)(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt):\s+\S/,
  /^(?:E\s+)?(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)$/,
  /^Traceback \(most recent call last\)/,
  /^(?:Exception in thread|Caused by:|Uncaught \w)/,
  /^(?:\S+?(?::\d+(?::\d+)?|\(\d+,\d+\)):?\s*(?:-\s*)?)?(?:fatal\s+)?(?:error|fatal|panic)(?:\[\w+\]|\s+TS\d+)?:/i,
  /^npm ERR!/,
  /(?:^|[\s[])(?:ERROR|FATAL|CRITICAL)(?:\]|:|\s)/,
  /\bE(?:NOENT|ACCES|PERM|CONNREFUSED|CONNRESET|ADDRINUSE|TIMEDOUT|EXIST|ISDIR|NOTDIR|PIPE|NOTFOUND|NOSPC)\b/,
  /\bHTTP(?:\/[\d.]+)? [45]\d\d\b/,
  /\b(?:exit(?:ed with)? (?:code|status)|non-zero exit status) [1-9]\d*/i,
  /^(?:FAIL(?:ED)?\b|--- FAIL:)|\b[1-9]\d* (?:failed|errors?)\b/,
  /: command not found$|\bNo such file or directory\b|\bPermission denied\b/,
];
/** A list item's bullets, and the kind label of a pinned fact (`- error: …`), which are not part of the fact. */
const LIST_PREFIX = /^(?:[-*•]\s+)+(?:(?:path|url|identifier|quantity|error|constraint):\s+)?/;
/**
 * What the engine itself writes into the context and that no fact is read from: reload references (their keys hold
 * the agent's id), a mask's or an offload's note (its sizes), and a summary's title and removed-items line (message
 * ids). The error lines a stub keeps after its note are read.
 */
const OWN_MARKERS =
  /context_reload\("[^"]*"\)|\[(?:Summary of earlier conversation|Removed from the context|tool result masked to save context|offloaded: )[^\]\n]*\]/g;

/** The lines of `text` that report an error, verbatim (ends' spaces, bullets and labels taken off). */
function errorLines(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.trim().replace(LIST_PREFIX, ''))
    .filter((line) => ERROR_PATTERNS.some((pattern) => pattern.test(line)));
}

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
    .filter((sentence) => CONSTRAINT.test(sentence) && errorLines(sentence).length === 0)
    .map(clip);
}

/** Every fact of the messages, deduplicated, in order of first appearance. */
export function extractFacts(messages: readonly FactSource[]): Fact[] {
  const facts: Fact[] = [];
  const seen = new Set<string>();
  let fromUser = false;
  let fromAgent = false;
  /** Facts already counted for the message being read. */
  let counted = new Set<string>();
  const add = (kind: FactKind, text: string, located = false) => {
    const key = `${kind}:${text}`;
    if (text.length < 2) return;
    if (seen.has(key)) {
      const fact = facts.find((f) => f.kind === kind && f.text === text)!;
      if (fromUser) fact.fromUser = true;
      if (fromAgent) fact.fromAgent = true;
      if (located) fact.located = true;
      if (!counted.has(key)) fact.mentions = (fact.mentions ?? 1) + 1;
      counted.add(key);
      return;
    }
    seen.add(key);
    counted.add(key);
    facts.push({
      kind,
      text,
      ...(fromUser ? { fromUser } : {}),
      ...(fromAgent ? { fromAgent } : {}),
      ...(located ? { located } : {}),
    });
  };
  const sources = messages.flatMap((message) => [
    { message, text: textOf(message.content), action: false },
    ...(message.tool_calls?.length ? [{ message, text: actionText(message), action: true }] : []),
  ]);
  let reading: FactSource | undefined;
  for (const { message, text: raw, action } of sources) {
    if (message !== reading) counted = new Set();
    reading = message;
    const text = raw.replace(OWN_MARKERS, ' ');
    fromUser = message.role === 'user';
    fromAgent = action;
    const urls = matches(URL, text);
    for (const url of urls) add('url', url);
    const withoutUrls = urls.reduce((rest, url) => rest.replaceAll(url, ' '), text);
    for (const match of withoutUrls.matchAll(PATH)) {
      const path = match[0].replace(/[.,;:!?]+$/, '');
      const after = withoutUrls.slice(match.index + match[0].length, match.index + match[0].length + 12);
      const afterNumber = /\d\s?$/.test(withoutUrls.slice(Math.max(0, match.index - 2), match.index));
      if (afterNumber && UNIT_AFTER_NUMBER.test(path)) continue;
      if (/[/\\.]/.test(path)) add('path', path, LINE_NUMBER_AFTER.test(after));
    }
    for (const id of [...matches(UUID, text), ...matches(HASH, text), ...matches(TICKET, text)]) add('identifier', id);
    for (const quantity of matches(QUANTITY, text)) add('quantity', quantity);
    // An error line verbatim, its closing punctuation included (only the ends' spaces go).
    for (const line of errorLines(text)) add('error', clip(line));
    if (message.role === 'user') for (const sentence of constraints(text)) add('constraint', sentence);
  }
  return facts;
}

/** Characters of its clause a fact is listed with, at most, on the side that says what it is. */
export const FACT_KEY_CHARS = 20;
/** Characters of a long line read on each side of a fact for its clause. */
const CLAUSE_REACH = 400;

/**
 * Where `line`'s clauses end: after a comma not inside a number (`2,320 m` is one), a semicolon or a sentence's end,
 * outside parentheses (an aside stays with its clause). A label's colon does not end one (`Hut: Rifugio Biella open`,
 * `"timeout_ms": 5000`).
 */
function clauseEnds(line: string): number[] {
  const ends: number[] = [];
  let depth = 0;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === '(') depth++;
    else if (c === ')') depth = Math.max(0, depth - 1);
    else if (depth > 0) continue;
    else if ((c === ',' && !/\d/.test(line[i + 1] ?? '')) || c === ';') ends.push(i + 1);
    else if ('.!?'.includes(c) && /\s/.test(line[i + 1] ?? ' ')) ends.push(i + 1);
  }
  return ends;
}

/**
 * A finder of the clause a fact was read from in `texts` (the texts read once, for any number of facts): its first
 * occurrence that does not start inside a longer word or number (`9 °C` is not read from `19 °C`), the clause of its
 * line that holds it, with the clauses before it (or else after it) while it has no word of its own (`today 07:00
 * fair, 9 °C`), cut to the words that say what it is ({@link keyed}). What a summary lists so that a quantity or an
 * identifier still says what it belongs to (`wind 6 km/h`, `"timeout_ms": 5000`). Undefined when no text holds it.
 */
export function factLineFinder(texts: readonly string[]): (fact: string) => string | undefined {
  const cleaned = texts.map((raw) => raw.replace(OWN_MARKERS, ' '));
  return (fact) => {
    for (const text of cleaned) {
      for (let at = text.indexOf(fact); at !== -1; at = text.indexOf(fact, at + 1)) {
        if (/[\p{L}\p{N}_.]/u.test(text[at - 1] ?? '') && /[\p{L}\p{N}]/u.test(fact[0] ?? '')) continue;
        // Its line, or of a long one the part around it (a clause's words are near).
        const start = Math.max(text.lastIndexOf('\n', at - 1) + 1, at - CLAUSE_REACH);
        const newline = text.indexOf('\n', at + fact.length);
        const end = Math.min(newline === -1 ? text.length : newline, at + fact.length + CLAUSE_REACH);
        return clauseOf(text.slice(start, end), at - start, fact.length);
      }
    }
    return undefined;
  };
}

/** The clause of `line` that holds `[at, at + length)`, with its neighbours while it has no word of its own. */
function clauseOf(line: string, at: number, length: number): string {
  const cuts = [0, ...clauseEnds(line), line.length];
  let first = cuts.findLastIndex((cut) => cut <= at);
  let last = cuts.findIndex((cut) => cut >= at + length);
  const ownWords = () => /\p{L}{2,}/u.test(line.slice(cuts[first], at) + line.slice(at + length, cuts[last]));
  while (!ownWords() && (first > 0 || last < cuts.length - 1)) {
    if (first > 0) first--;
    else last++;
  }
  const clause = line.slice(cuts[first], cuts[last]);
  const lead = clause.length - clause.trimStart().length;
  return keyed(clause.trim().replace(/[,;.]$/, ''), at - cuts[first]! - lead, length);
}

/**
 * A fact with what it is said of, from its clause: the words before it, at most {@link FACT_KEY_CHARS} characters
 * (whole words), or where no word comes before it, the words after it (`450 m of climbing`); on one line, bullets off.
 */
function keyed(clause: string, at: number, length: number): string {
  let from = Math.max(0, at - FACT_KEY_CHARS);
  if (from > 0) {
    const space = clause.indexOf(' ', from);
    from = space === -1 || space >= at ? at : space + 1;
  }
  let to = at + length;
  if (!/\p{L}{2,}/u.test(clause.slice(from, at))) {
    to = Math.min(clause.length, to + FACT_KEY_CHARS);
    const space = clause.lastIndexOf(' ', to);
    if (to < clause.length) to = space > at + length ? space : at + length;
  }
  // A closing bracket or quote right after it stays with the opening one before it: `Auronzo (2,320 m)`, `"10 MB"`.
  const close = clause[to];
  const open = close === ')' ? '(' : close === ']' ? '[' : close;
  if (open !== undefined && `)]"'`.includes(close!) && clause.slice(from, at).includes(open)) to++;
  return clause.slice(from, to).replace(/\s+/g, ' ').trim().replace(LIST_PREFIX, '');
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

/**
 * The facts of the agent's own actions first, then the others; each part those named with a line number first (a
 * traceback's frames before a listing's lines), then by mentions (the most often named first), then in order of
 * appearance.
 */
export function agentFirst(facts: readonly Fact[]): Fact[] {
  const weight = (fact: Fact) => (fact.located ? 1_000_000 : 0) + (fact.mentions ?? 1);
  const byMentions = (part: readonly Fact[]) =>
    part
      .map((fact, order) => ({ fact, order }))
      .sort((a, b) => weight(b.fact) - weight(a.fact) || a.order - b.order)
      .map(({ fact }) => fact);
  return [...byMentions(facts.filter((f) => f.fromAgent)), ...byMentions(facts.filter((f) => !f.fromAgent))];
}

/**
 * At most `max` facts: the user's own first, then the most valuable kinds, those of the agent's own actions first
 * within a kind (the files it edited before the paths a search listed), each by mentions, then in order of appearance.
 */
export function prioritizeFacts(facts: readonly Fact[], max: number): Fact[] {
  const byKind = (from: readonly Fact[]) =>
    PIN_ORDER.flatMap((kind) => agentFirst(from.filter((f) => f.kind === kind)));
  return [...byKind(facts.filter((f) => f.fromUser)), ...byKind(facts.filter((f) => !f.fromUser))].slice(0, max);
}
