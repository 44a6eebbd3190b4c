/**
 * The model call, streamed: `stream: true` (with `stream_options.include_usage`), the chunks assembled into the
 * same completion the call that is not streamed returns (content, tool calls with their arguments, usage, the model
 * that served it), each delta handed to `onDelta` as it arrives (the live stream, activities/stream.ts).
 *
 * Providers that do not stream still work: a 400 that says so (its message names `stream`) is answered by calling
 * again without streaming, and the endpoint is then called without streaming for the rest of the process; a worker
 * can also turn streaming off (`stream: false` in its activity dependencies). docs/streaming.md.
 *
 * Assembly is a pure function ({@link assembleCompletion}) over the chunks, unit-tested. What cannot be kept (content
 * that is not text, tool_calls that are not a list, a call without an id or name) is kept as the provider sent it,
 * so that `readModelReply` refuses it exactly as it refuses a completion that is not streamed.
 */
import OpenAI from 'openai';

/** A piece of the reply as it arrives. */
export type ReplyDelta =
  | { kind: 'text'; text: string }
  | { kind: 'tool-call-delta'; index: number; callId?: string; name?: string; arguments: string };

/** The completion as the call that is not streamed has it (the parts longrun reads). */
export interface AssembledCompletion {
  choices: { message: { content: unknown; tool_calls?: unknown } }[];
  /** As the provider sent it: OpenAI's fields, and what else it has (`prompt_tokens_details`, …; activities/usage.ts). */
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens?: number; [field: string]: unknown } | null;
  model?: string;
}

interface CallPieces {
  id?: unknown;
  type?: unknown;
  name?: unknown;
  arguments: unknown;
}

/** Accumulates chunks into a completion. */
export class CompletionAssembler {
  private sawChoice = false;
  private content: unknown = undefined;
  private rawCalls: unknown = undefined;
  private readonly calls: CallPieces[] = [];
  private usage: AssembledCompletion['usage'];
  private model: string | undefined;

  /** Takes one chunk; returns the deltas it carries (text, tool call pieces). */
  add(chunk: unknown): ReplyDelta[] {
    const { choices, usage, model } = (chunk ?? {}) as { choices?: unknown; usage?: unknown; model?: unknown };
    if (typeof model === 'string' && model !== '') this.model = model;
    if (usage) this.usage = usage as AssembledCompletion['usage'];
    const deltas: ReplyDelta[] = [];
    if (!Array.isArray(choices)) return deltas;
    for (const choice of choices) {
      const { index, delta } = (choice ?? {}) as { index?: unknown; delta?: unknown };
      if (index !== undefined && index !== 0) continue; // one choice is asked for
      this.sawChoice = true;
      const { content, tool_calls: calls } = (delta ?? {}) as { content?: unknown; tool_calls?: unknown };
      if (typeof content === 'string') {
        if (typeof this.content === 'string' || this.content === undefined || this.content === null) {
          this.content = (typeof this.content === 'string' ? this.content : '') + content;
        }
        if (content !== '') deltas.push({ kind: 'text', text: content });
      } else if (content === null) {
        if (this.content === undefined) this.content = null;
      } else if (content !== undefined) {
        this.content = content; // not text: kept as sent, for readModelReply to refuse
      }
      if (calls === undefined || calls === null) continue;
      if (!Array.isArray(calls)) {
        this.rawCalls = calls; // not a list: kept as sent, refused by readModelReply
        continue;
      }
      for (const piece of calls) deltas.push(...this.addCall(piece));
    }
    return deltas;
  }

  private addCall(piece: unknown): ReplyDelta[] {
    const { index, id, type, function: fn } = (piece ?? {}) as Record<string, unknown>;
    const at = typeof index === 'number' && Number.isSafeInteger(index) && index >= 0 ? index : this.calls.length;
    const call = (this.calls[at] ??= { arguments: undefined });
    if (id !== undefined && id !== null) call.id = id;
    if (type !== undefined && type !== null) call.type = type;
    const { name, arguments: args } = (fn ?? {}) as { name?: unknown; arguments?: unknown };
    if (typeof name === 'string') call.name = typeof call.name === 'string' ? call.name + name : name;
    else if (name !== undefined && name !== null) call.name = name; // not a name: kept as sent, refused later
    if (typeof args === 'string') {
      call.arguments = (typeof call.arguments === 'string' ? call.arguments : '') + args;
    } else if (args !== undefined && args !== null) {
      call.arguments = args; // the JSON value itself: read as its JSON text by readModelReply
    }
    const text = typeof args === 'string' ? args : '';
    if (text === '' && typeof id !== 'string' && typeof name !== 'string') return [];
    return [
      {
        kind: 'tool-call-delta',
        index: at,
        ...(typeof id === 'string' ? { callId: id } : {}),
        ...(typeof name === 'string' ? { name } : {}),
        arguments: text,
      },
    ];
  }

  /** The completion so far: no choices when no chunk carried one (an empty reply). */
  completion(): AssembledCompletion {
    const toolCalls =
      this.rawCalls !== undefined
        ? this.rawCalls
        : this.calls.length > 0
          ? this.calls.map((call) => ({
              id: call.id,
              type: call.type ?? 'function',
              function: { name: call.name, arguments: call.arguments ?? '' },
            }))
          : undefined;
    return {
      choices: this.sawChoice
        ? [
            {
              message: { content: this.content ?? null, ...(toolCalls !== undefined ? { tool_calls: toolCalls } : {}) },
            },
          ]
        : [],
      ...(this.usage ? { usage: this.usage } : {}),
      ...(this.model ? { model: this.model } : {}),
    };
  }
}

/** All of `chunks` assembled (see {@link CompletionAssembler}). */
export function assembleCompletion(chunks: readonly unknown[]): AssembledCompletion {
  const assembler = new CompletionAssembler();
  for (const chunk of chunks) assembler.add(chunk);
  return assembler.completion();
}

/** Whether a provider's error says it does not stream (a 400 naming `stream`). */
export function streamUnsupported(error: unknown): boolean {
  if (!(error instanceof OpenAI.APIError) || error.status !== 400) return false;
  return /stream/i.test(error.message) && !/context|too long|too many tokens/i.test(error.message);
}

type CreateBody = Omit<OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming, 'stream'>;

/** The endpoints (by client) that said they do not stream: called without streaming from then on. */
const NOT_STREAMING = new WeakSet<OpenAI>();

/**
 * Calls the model, streaming unless `stream` is false or the endpoint said it does not stream; `onDelta` sees each
 * piece as it arrives (streamed calls only). `signal` aborts the HTTP request.
 */
export async function createCompletion(
  openai: OpenAI,
  body: CreateBody,
  options: { stream: boolean; signal?: AbortSignal; onDelta?: (delta: ReplyDelta) => void },
): Promise<{ completion: AssembledCompletion; streamed: boolean }> {
  const request = options.signal ? { signal: options.signal } : {};
  const plain = async () => ({
    completion: (await openai.chat.completions.create(body, request)) as AssembledCompletion,
    streamed: false,
  });
  if (!options.stream || NOT_STREAMING.has(openai)) return plain();
  let stream: AsyncIterable<unknown>;
  try {
    stream = await openai.chat.completions.create(
      { ...body, stream: true, stream_options: { include_usage: true } },
      request,
    );
  } catch (error) {
    if (!streamUnsupported(error)) throw error;
    NOT_STREAMING.add(openai);
    return plain();
  }
  const assembler = new CompletionAssembler();
  for await (const chunk of stream) for (const delta of assembler.add(chunk)) options.onDelta?.(delta);
  return { completion: assembler.completion(), streamed: true };
}
