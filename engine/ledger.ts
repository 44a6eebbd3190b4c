/**
 * The task ledger: goal, constraints, decisions, done, pending and the next action, carried verbatim across
 * compactions in a message of its own (protected: no strategy removes it) and updated by each summary. The goal and
 * the user's constraints are taken verbatim from the user's messages, so no summary can paraphrase them away.
 */
import { extractFacts } from './facts.ts';
import type { Fact } from './facts.ts';
import { jsonObjectOf, LEDGER_FIELDS } from './summary.ts';
import { headOf } from './text.ts';

export interface TaskLedger {
  goal: string;
  constraints: string[];
  decisions: string[];
  done: string[];
  pending: string[];
  nextAction: string;
  /**
   * Key facts of what left the context, carried from compaction to compaction: the error lines the agent met and the
   * files it acted on (the newest {@link LEDGER_KEY_FACTS}). Absent in ledgers made before.
   */
  keyFacts?: string[];
}

/** What a summary adds to the ledger (the JSON fields `decisions`, `done`, `pending`, and its next step). */
export interface LedgerUpdate {
  decisions?: string[];
  done?: string[];
  pending?: string[];
  nextAction?: string;
}

export const EMPTY_LEDGER: TaskLedger = {
  goal: '',
  constraints: [],
  decisions: [],
  done: [],
  pending: [],
  nextAction: '',
};

/** Entries kept per list (the newest; constraints: the oldest, since a rule stated first still holds). */
export const LEDGER_ITEMS = 30;
/** Key facts kept (the newest): error lines run to about 100 characters, so about 1,000 tokens at most. */
export const LEDGER_KEY_FACTS = 40;
/** Characters of the goal kept verbatim. */
export const GOAL_CHARS = 1_000;
const ITEM_CHARS = 300;

const clean = (items: readonly unknown[] | undefined) =>
  (items ?? [])
    .filter((item): item is string => typeof item === 'string')
    .map((item) => headOf(item.replace(/\s+/g, ' ').trim(), ITEM_CHARS))
    .filter((item) => item !== '');

function union(
  previous: readonly string[],
  added: readonly string[],
  keep: 'oldest' | 'newest',
  max = LEDGER_ITEMS,
): string[] {
  const seen = new Set(previous.map((item) => item.toLowerCase()));
  const merged = [...previous];
  for (const item of added) {
    if (seen.has(item.toLowerCase())) continue;
    seen.add(item.toLowerCase());
    merged.push(item);
  }
  return keep === 'oldest' ? merged.slice(0, max) : merged.slice(-max);
}

/**
 * The ledger after a compaction: the goal stays (or is set from the user's first message), the user's constraints
 * of the removed span are added verbatim, decisions and done are appended, pending and the next action follow the
 * latest summary, and the key facts of what left (`facts`) are appended.
 */
export function updateLedger(
  previous: TaskLedger | undefined,
  input: { goal?: string; userMessages: readonly string[]; update?: LedgerUpdate; facts?: readonly Fact[] },
): TaskLedger {
  const base = previous ?? EMPTY_LEDGER;
  const constraints = extractFacts(input.userMessages.map((content) => ({ role: 'user', content })))
    .filter((fact) => fact.kind === 'constraint')
    .map((fact) => fact.text);
  const update = input.update ?? {};
  const keyFacts = union(base.keyFacts ?? [], keyFactsOf(input.facts ?? []), 'newest', LEDGER_KEY_FACTS);
  return {
    goal: base.goal || headOf((input.goal ?? '').trim(), GOAL_CHARS),
    constraints: union(base.constraints, constraints, 'oldest'),
    decisions: union(base.decisions, clean(update.decisions), 'newest'),
    done: union(base.done, clean(update.done), 'newest'),
    pending: update.pending !== undefined ? clean(update.pending).slice(0, LEDGER_ITEMS) : base.pending,
    nextAction: update.nextAction?.trim() ? headOf(update.nextAction.trim(), ITEM_CHARS) : base.nextAction,
    ...(keyFacts.length > 0 ? { keyFacts } : {}),
  };
}

/** The facts the ledger carries: error lines, and the paths of the agent's own actions (the files it edited). */
function keyFactsOf(facts: readonly Fact[]): string[] {
  return facts.filter((f) => f.kind === 'error' || (f.kind === 'path' && f.fromAgent)).map((f) => f.text);
}

/** The first line of a summary's next steps: the ledger's next action. */
export function nextActionOf(nextSteps: string): string {
  return (nextSteps.split('\n').find((line) => line.trim() !== '') ?? '').replace(/^\s*(?:[-*]|\d+[.)])\s*/, '');
}

/** The ledger fields of a summary reply in JSON (absent when the provider answered in text). */
export function parseLedgerUpdate(reply: string): LedgerUpdate {
  const value = jsonObjectOf(reply);
  const update: LedgerUpdate = {};
  if (!value) return update;
  for (const key of LEDGER_FIELDS) {
    if (Array.isArray(value[key])) update[key] = clean(value[key] as unknown[]);
  }
  return update;
}

const section = (title: string, items: readonly string[]) =>
  items.length ? [`## ${title}`, ...items.map((item) => `- ${item}`)] : [];

export const LEDGER_HEADER =
  '[Task ledger: carried verbatim across compactions; the goal and constraints are the user’s own words]';

/** The ledger as the message the model reads. */
export function renderLedger(ledger: TaskLedger): string {
  return [
    LEDGER_HEADER,
    ...(ledger.goal ? ['## Goal', ledger.goal] : []),
    ...section('Constraints', ledger.constraints),
    ...section('Decisions', ledger.decisions),
    ...section('Done', ledger.done),
    ...section('Pending', ledger.pending),
    ...section('Key facts (errors met, files acted on)', ledger.keyFacts ?? []),
    ...(ledger.nextAction ? ['## Next action', ledger.nextAction] : []),
  ].join('\n');
}
