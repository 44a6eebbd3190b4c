/**
 * Carrying out a plan: the text that replaces a message (head and tail with a marker, a one-line stub, a preview),
 * and the new working context assembled from the plan's operations, the replacements and the summary. Pure: the
 * activity that stores the replacements and counts them calls these.
 */
import type { ChatMessage, ContentPart, MessageContent, MessageMeta } from './messages.ts';
import { isUserTurn, kindOf, originalKeyOf, textOf } from './messages.ts';
import type { Operation, Plan } from './planner/index.ts';
import { headOf, tailOf } from './text.ts';
import { countMessage } from './tokens.ts';
import type { TokenCounter } from './tokens.ts';
import { assertToolPairs } from './tool-pairs.ts';
import { extractFacts } from './facts.ts';

/** Fills `{ref}` and `{omitted}` in a marker template. */
export function fillMarker(template: string, ref: string, omitted: number): string {
  return template.replaceAll('{ref}', ref).replaceAll('{omitted}', String(omitted));
}

/**
 * Head and tail of `text` around the marker (`{omitted}`: the characters left out), each on its own line; `headOnly`
 * (no tail asked for), the head and then the marker (AgentScope's form: the beginning, then its truncation reminder).
 * The text itself when it is short enough. Neither cut splits a surrogate pair (a head may end, a tail start, one
 * unit short of the count asked).
 */
export function truncateText(
  text: string,
  headChars: number,
  tailChars: number,
  marker: string,
  ref: string,
  headOnly = tailChars === 0,
): string {
  if (headChars + tailChars >= text.length) return text;
  const head = headOf(text, headChars);
  const tail = tailOf(text, tailChars);
  const omitted = text.length - head.length - tail.length;
  const filled = fillMarker(marker, ref, omitted);
  return headOnly ? `${head}\n${filled}` : `${head}\n${filled}\n${tail}`;
}

/** Head share of a cut when the operation gives none (both counts 0). */
export const DEFAULT_HEAD_SHARE = 0.7;

/** What the apply step counts replacements with: the agent's counter and margin. */
export interface ReplacementCounting {
  counter: TokenCounter;
  /** The agent's safety margin (≥ 1), as its messages are counted; default 1. */
  margin?: number;
}

/**
 * The head and tail of `text` around the marker, cut so that `message` with this content counts at most `maxTokens`
 * (chat overhead, name, tool_call_id and margin included) and as close under it as the text allows: a binary search
 * over the characters kept, each candidate counted with the real tokenizer, `headShare` of them from the head. The
 * text itself when it fits whole; the marker alone (with the head and tail empty) when not even that fits.
 */
export function truncateToTokens(
  message: ChatMessage,
  text: string,
  maxTokens: number,
  headShare: number,
  marker: string,
  ref: string,
  { counter, margin = 1 }: ReplacementCounting,
): string {
  const fits = (content: string) => countMessage(counter, { ...message, content }, margin) <= maxTokens;
  const cut = (keep: number) => {
    const head = Math.round(keep * headShare);
    return truncateText(text, head, keep - head, marker, ref, headShare >= 1);
  };
  if (fits(text)) return text;
  // Invariant: `low` characters kept fit (0 is taken as the floor); more than `high` do not.
  let low = 0;
  let high = text.length - 1;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (fits(cut(mid))) low = mid;
    else high = mid - 1;
  }
  return cut(low);
}

/** The stub a part that is not text becomes in a replacement: what it was, and where the original is. */
export function partStub(part: ContentPart, ref: string): string {
  const what = part.type === 'image_url' ? 'image' : `${String(part.type)} part`;
  return `[${what} not kept here: the original message, with it, is stored at ${ref}]`;
}

/**
 * The text a replacement is cut from: a string content as it is; an array of parts as its text parts, each other
 * part (an image, audio, a file) a one-line stub naming the stored original ({@link partStub}), joined by newlines.
 */
export function replaceableText(content: MessageContent, ref: string): string {
  return textOf(content, (part) => partStub(part, ref));
}

/** Characters of error lines and paths a mask stub or an offload preview keeps of what it replaces. */
export const REPORTED_CHARS = 400;

/**
 * The error lines of `text`, verbatim, the last ones first chosen (the final exception of a traceback), then the
 * file paths it names, within {@link REPORTED_CHARS}, each kind in its order: what a masked or offloaded result must
 * not take out of the context.
 */
export function reportedErrors(text: string, ref = ''): string[] {
  // The stored original's own key (named in stubs of parts) is not a path the result reported.
  const facts = extractFacts([{ role: 'tool', content: text }]).filter(
    (f) => f.kind !== 'path' || !ref.includes(f.text),
  );
  const chosen = new Set<string>();
  let chars = 0;
  const take = (candidates: readonly string[]) => {
    for (const fact of candidates) {
      if (chars + fact.length + 3 > REPORTED_CHARS) continue;
      chosen.add(fact);
      chars += fact.length + 3;
    }
  };
  const errors = facts.filter((f) => f.kind === 'error').map((f) => f.text);
  take([...errors].reverse());
  take(facts.filter((f) => f.kind === 'path').map((f) => f.text));
  return [...errors, ...facts.filter((f) => f.kind === 'path').map((f) => f.text)].filter((f) => chosen.has(f));
}

const reportedLine = (errors: readonly string[]) => (errors.length ? `\nIt reported: ${errors.join(' | ')}` : '');

/** The stub that stands for a masked tool result: its size, where it is, and its error lines. */
export function maskText(original: MessageMeta, ref: string, errors: readonly string[] = []): string {
  return (
    `[tool result masked to save context: ${original.chars} characters, ${original.tokens} tokens; read it with ` +
    `context_reload("${ref}")]${reportedLine(errors)}`
  );
}

/**
 * The marker that stands for a superseded tool result: the newer result of the same call that stands for it now, and
 * where this one is stored.
 */
export function supersededText(original: MessageMeta, ref: string, newerId: string): string {
  const tool = original.tool !== undefined ? `${original.tool} ` : '';
  return (
    `[superseded: the tool ${tool}was called again with the same arguments; its newer result is message ${newerId}. ` +
    `This older result (${original.tokens} tokens) is stored: context_reload("${ref}")]`
  );
}

/**
 * The mask stub after the head of `text` that fits `previewTokens` (the tool's `preview`): the message as replaced
 * counts at most the stub's tokens and the preview's, by counting.
 */
function previewedMask(
  message: ChatMessage,
  text: string,
  stub: string,
  previewTokens: number,
  counting: ReplacementCounting,
): string {
  const stubTokens = countMessage(counting.counter, { ...message, content: stub }, counting.margin ?? 1);
  // Head only (share 1): the text's head, the stub after it (its key holds no `{ref}` or `{omitted}` to fill).
  const cut = truncateToTokens(message, text, stubTokens + previewTokens, 1, stub, '', counting);
  return cut === text ? `${text}\n${stub}` : cut.trimEnd();
}

/** A preview of an offloaded message, how to read the rest, and the error lines past the preview. */
export function offloadText(text: string, previewChars: number, ref: string): string {
  const preview = headOf(text, previewChars);
  const later = reportedErrors(text.slice(preview.length), ref);
  return `${preview}${preview.length < text.length ? '…' : ''}\n[offloaded: ${text.length} characters in all; read them with context_reload("${ref}")]${reportedLine(later)}`;
}

/** The summary message (its text already rendered, header included), or the user message it was prepended to. */
export function summaryMessage(rendered: string, prependTo?: ChatMessage): ChatMessage {
  if (!prependTo) return { role: 'user', content: rendered };
  const lead = `${rendered}\n\n[The user's message continues:]`;
  // A message of parts keeps them (its images too), after a text part that carries the summary.
  if (Array.isArray(prependTo.content)) {
    return { ...prependTo, content: [{ type: 'text', text: lead }, ...prependTo.content] };
  }
  return { ...prependTo, content: `${lead}\n${textOf(prependTo.content)}` };
}

/**
 * The body that replaces `original` under a truncate, mask or offload operation; its content is always text. A
 * truncate with `maxTokens` is cut by counting with `counting` ({@link truncateToTokens}); one without (a plan
 * stored before counted cuts) keeps `headChars` + `tailChars` characters. A message of parts is cut from
 * {@link replaceableText}: its text, with each image or other part as a stub naming the stored original, which
 * stays byte-identical and reloadable.
 */
export function replacementBody(
  original: ChatMessage,
  meta: MessageMeta,
  op: Exclude<Operation, { op: 'keep' } | { op: 'drop' }>,
  marker: string,
  counting: ReplacementCounting,
): ChatMessage {
  const ref = originalKeyOf(meta);
  const text = replaceableText(original.content, ref);
  if (op.op === 'mask') {
    if (op.supersededBy !== undefined) return { ...original, content: supersededText(meta, ref, op.supersededBy) };
    const stub = maskText(meta, ref, reportedErrors(text, ref));
    if (!op.previewTokens) return { ...original, content: stub };
    return { ...original, content: previewedMask(original, text, stub, op.previewTokens, counting) };
  }
  if (op.op === 'offload') return { ...original, content: offloadText(text, op.previewChars, ref) };
  if (op.maxTokens === undefined) {
    return { ...original, content: truncateText(text, op.headChars, op.tailChars, marker, ref) };
  }
  const both = op.headChars + op.tailChars;
  const share = both > 0 ? op.headChars / both : DEFAULT_HEAD_SHARE;
  return { ...original, content: truncateToTokens(original, text, op.maxTokens, share, marker, ref, counting) };
}

/**
 * The working context after `plan`: kept messages as they were, replaced ones by their `replacements` (same id,
 * new key and tokens, `ref` to the original), the summary where the plan puts it, and the task ledger (if given)
 * in place of the previous one, right after the summary (after the system prompt when there is none). Throws if the
 * result breaks a
 * tool pair (a bug, never an input problem: every plan keeps atomic groups whole).
 */
export function applyPlan(
  context: readonly MessageMeta[],
  plan: Plan,
  replacements: Readonly<Record<string, MessageMeta>>,
  summary?: MessageMeta,
  ledger?: MessageMeta,
  parts: readonly MessageMeta[] = [],
): MessageMeta[] {
  const byId = new Map(plan.operations.map((op) => [op.id, op]));
  const placement = plan.summary?.placement;
  // Where each summary message goes: before a message (by id) or at the end (undefined); summaries in their places
  // (the plan's parts: `summary`, then `parts`) each where its span was.
  const before = new Map<string | undefined, MessageMeta[]>();
  const put = (at: string | undefined, meta: MessageMeta) => before.set(at, [...(before.get(at) ?? []), meta]);
  if (summary && plan.summary?.parts) {
    plan.summary.parts.forEach((part, i) => {
      const meta = i === 0 ? summary : parts[i - 1];
      if (!meta) throw new Error(`applyPlan: no summary for part ${i + 1} of ${plan.summary!.parts!.length}`);
      put(part.beforeId, meta);
    });
  } else if (summary && placement?.mode === 'message') put(placement.beforeId, summary);
  const out: MessageMeta[] = [];
  for (const meta of context) {
    const op = byId.get(meta.id) ?? { op: 'keep', id: meta.id };
    out.push(...(before.get(meta.id) ?? []));
    if (op.op === 'drop') continue;
    if (summary && placement?.mode === 'prepend' && placement.id === meta.id) {
      // The user's message with the summary at its head: still the user's turn (chatgpt-on-wechat).
      out.push({ ...summary, id: meta.id, ref: originalKeyOf(meta), ...(isUserTurn(meta) ? { userTurn: true } : {}) });
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
  out.push(...(before.get(undefined) ?? []));
  if (ledger) {
    // The new ledger replaces the old one, right after the summary (each summary replaces both): what never changes
    // (the system prompt, the goal) stays before them, a prefix the provider's prompt cache keeps across compactions.
    const rest = out.filter((m) => kindOf(m) !== 'ledger');
    const summaryAt = rest.findLastIndex((m) => kindOf(m) === 'summary');
    const at = summaryAt !== -1 ? summaryAt + 1 : rest.findIndex((m) => m.role !== 'system');
    rest.splice(at === -1 ? rest.length : at, 0, ledger);
    out.splice(0, out.length, ...rest);
  }
  assertToolPairs(out);
  return out;
}
