/**
 * Carrying out a plan: the text that replaces a message (head and tail with a marker, a one-line stub, a preview),
 * and the new working context assembled from the plan's operations, the replacements and the summary. Pure: the
 * activity that stores the replacements and counts them calls these.
 */
import type { ChatMessage, MessageMeta } from './messages.ts';
import { kindOf, originalKeyOf } from './messages.ts';
import type { Operation, Plan } from './planner.ts';
import { assertToolPairs } from './tool-pairs.ts';

/** Fills `{ref}` and `{omitted}` in a marker template. */
export function fillMarker(template: string, ref: string, omitted: number): string {
  return template.replaceAll('{ref}', ref).replaceAll('{omitted}', String(omitted));
}

/** Head and tail of `text` around the marker; the text itself when it is short enough. */
export function truncateText(text: string, headChars: number, tailChars: number, marker: string, ref: string): string {
  if (headChars + tailChars >= text.length) return text;
  const omitted = text.length - headChars - tailChars;
  return `${text.slice(0, headChars)}\n${fillMarker(marker, ref, omitted)}\n${tailChars > 0 ? text.slice(-tailChars) : ''}`;
}

/** The one-line stub that stands for a masked tool result. */
export function maskText(original: MessageMeta, ref: string): string {
  return `[tool result masked to save context: ${original.chars} characters, ${original.tokens} tokens; read it with context_reload("${ref}")]`;
}

/** A preview of an offloaded message and how to read the rest. */
export function offloadText(text: string, previewChars: number, ref: string): string {
  const preview = text.slice(0, previewChars);
  return `${preview}${preview.length < text.length ? '…' : ''}\n[offloaded: ${text.length} characters in all; read them with context_reload("${ref}")]`;
}

/** The summary message (its text already rendered, header included), or the user message it was prepended to. */
export function summaryMessage(rendered: string, prependTo?: ChatMessage): ChatMessage {
  if (!prependTo) return { role: 'user', content: rendered };
  return { ...prependTo, content: `${rendered}\n\n[The user's message continues:]\n${prependTo.content ?? ''}` };
}

/** The body that replaces `original` under a truncate, mask or offload operation. */
export function replacementBody(
  original: ChatMessage,
  meta: MessageMeta,
  op: Exclude<Operation, { op: 'keep' } | { op: 'drop' }>,
  marker: string,
): ChatMessage {
  const ref = originalKeyOf(meta);
  const text = original.content ?? '';
  const content =
    op.op === 'truncate'
      ? truncateText(text, op.headChars, op.tailChars, marker, ref)
      : op.op === 'mask'
        ? maskText(meta, ref)
        : offloadText(text, op.previewChars, ref);
  return { ...original, content };
}

/**
 * The working context after `plan`: kept messages as they were, replaced ones by their `replacements` (same id,
 * new key and tokens, `ref` to the original), the summary where the plan puts it, and the task ledger (if given)
 * in place of the previous one, after the system prompt. Throws if the result breaks a
 * tool pair (a bug, never an input problem: every plan keeps atomic groups whole).
 */
export function applyPlan(
  context: readonly MessageMeta[],
  plan: Plan,
  replacements: Readonly<Record<string, MessageMeta>>,
  summary?: MessageMeta,
  ledger?: MessageMeta,
): MessageMeta[] {
  const byId = new Map(plan.operations.map((op) => [op.id, op]));
  const placement = plan.summary?.placement;
  const out: MessageMeta[] = [];
  for (const meta of context) {
    const op = byId.get(meta.id) ?? { op: 'keep', id: meta.id };
    if (summary && placement?.mode === 'message' && placement.beforeId === meta.id) out.push(summary);
    if (op.op === 'drop') continue;
    if (summary && placement?.mode === 'prepend' && placement.id === meta.id) {
      out.push({ ...summary, id: meta.id, ref: originalKeyOf(meta) });
      continue;
    }
    if (op.op === 'keep') {
      out.push(meta);
      continue;
    }
    const replacement = replacements[meta.id];
    if (!replacement) throw new Error(`applyPlan: no replacement for ${meta.id} (${op.op})`);
    out.push(replacement);
  }
  if (summary && placement?.mode === 'message' && placement.beforeId === undefined) out.push(summary);
  if (ledger) {
    // The new ledger replaces the old one, right after the system prompt.
    const rest = out.filter((m) => kindOf(m) !== 'ledger');
    const at = rest.findIndex((m) => m.role !== 'system');
    rest.splice(at === -1 ? rest.length : at, 0, ledger);
    out.splice(0, out.length, ...rest);
  }
  assertToolPairs(out);
  return out;
}
