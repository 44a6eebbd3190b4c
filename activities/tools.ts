/**
 * Tools the model can call. Each is a function run inside the `runTool` activity, so a tool call is durable,
 * retried by Temporal and visible in the UI. Users add their own with {@link defineTool} and pass them to the worker;
 * `context_reload` and `context_search` are built in: the first returns stored content (an offloaded segment, a stored
 * message) in pages, the second finds it by its words among everything the agent's life stored.
 *
 * @example
 *   const weather = defineTool({
 *     name: 'weather',
 *     description: 'Current weather for a city',
 *     parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
 *     run: async ({ city }) => `Sunny in ${String(city)}`,
 *   });
 *   await createAgentWorker({ ..., tools: [weather] });
 */
import type { BlobStore } from '../storage/s3.ts';
import { lifePrefix } from '../contract/keys.ts';
import type { AgentLife } from '../contract/keys.ts';
import { TOOL_NAME_PATTERN } from '../engine/policy.ts';
import { validateToolLimits } from '../engine/policy-validation.ts';
import type { ToolLimits } from '../engine/policy.ts';
import { safeSlice } from '../engine/text.ts';
import { renderMatches, SEARCH_LIMITS, SearchInputError, searchIndexOf } from '../storage/search-index.ts';
import { DELEGATE_TOOL, validateDelegation } from '../contract/delegation.ts';
import type { ChildSettings, ToolSelection } from '../contract/inputs.ts';

/**
 * Thrown by a tool for a call the model got wrong (bad arguments, unknown reference): the model sees the message
 * as the tool's result. Any other error is treated as a fault of the world and retried by the activity.
 */
export class ToolInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolInputError';
  }
}

export interface ToolContext extends AgentLife {
  store: BlobStore;
  /**
   * The id of the tool call being answered. A call runs at least once: when its worker dies while it runs, it runs
   * again on another worker (the same `callId`). A tool with side effects that must happen once dedupes by it.
   */
  callId?: string;
  /**
   * Aborted when the call is cancelled (an `interrupt` of the turn): a tool that can stop early should. One that
   * does not is abandoned after {@link TOOL_CANCEL_GRACE_MS}; its late result is stored apart and not used.
   */
  signal?: AbortSignal;
}

/** How long a cancelled tool call may take to stop before it is abandoned. */
export const TOOL_CANCEL_GRACE_MS = 2_000;

export interface ToolDefinition {
  name: string;
  description: string;
  /** JSON schema of the arguments object. */
  parameters: Record<string, unknown>;
  /** Returns the tool result as text. Throw {@link ToolInputError} for a result the model should see as an error. */
  run: (args: Record<string, unknown>, context: ToolContext) => Promise<string>;
  /**
   * Whether a call waits for a person's approval (`approveTool` / `denyTool`) before it runs: `'always'`, or a rule
   * over the call's arguments (true: ask). An agent can ask for more by name (its input's `toolApproval.tools`).
   */
  approval?: 'always' | ((args: Record<string, unknown>) => boolean);
  /**
   * A result over this many tokens is cut as it arrives, before the model first reads it: head and tail around a
   * notice naming the stored whole result (`context_reload` reads it). An agent's policy (`tools`) may set its own.
   */
  maxResultTokens?: number;
  /** Tokens of a result that stay when it is cut or masked (default: a cut keeps `maxResultTokens`, a mask none). */
  preview?: number;
  /** This tool's results are never masked or superseded by a newer result of the same call. */
  neverMask?: boolean;
  /**
   * Made by {@link delegateTo}: a call is not run here; the agent's workflow delegates its task to a child agent
   * started with these settings.
   */
  delegation?: ChildSettings;
}

/** The tool schema as the Chat Completions API takes it. */
export interface ToolSchema {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/**
 * Checks a tool's definition and returns it: a bad name, approval rule or limit (`maxResultTokens`, `preview`,
 * `neverMask`) throws, naming the tool, the field and what is allowed.
 */
export function defineTool(tool: ToolDefinition): ToolDefinition {
  if (!TOOL_NAME_PATTERN.test(tool.name)) {
    throw new Error(`tool name ${JSON.stringify(tool.name)}: must be 1 to 64 letters, digits, underscores or hyphens`);
  }
  const approval: unknown = tool.approval;
  if (approval !== undefined && approval !== 'always' && typeof approval !== 'function') {
    throw new Error(
      `tool ${tool.name}: approval must be 'always' or a function of the arguments (got ${typeof approval})`,
    );
  }
  validateToolLimits(
    definedLimits(tool),
    (field, value, allowed) =>
      new Error(`tool ${tool.name}: ${field} ${JSON.stringify(value)} is not allowed (${allowed})`),
  );
  return tool;
}

/** The limits a tool's definition sets (only those it sets). */
export function definedLimits(tool: Pick<ToolDefinition, 'maxResultTokens' | 'preview' | 'neverMask'>): ToolLimits {
  return {
    ...(tool.maxResultTokens !== undefined ? { maxResultTokens: tool.maxResultTokens } : {}),
    ...(tool.preview !== undefined ? { preview: tool.preview } : {}),
    ...(tool.neverMask !== undefined ? { neverMask: tool.neverMask } : {}),
  };
}

/** Whether a call of `tool` with `args` waits for approval by the tool's own rule (a rule that throws: it waits). */
export function asksApproval(tool: ToolDefinition | undefined, args: () => Record<string, unknown>): boolean {
  if (!tool?.approval) return false;
  if (tool.approval === 'always') return true;
  try {
    return tool.approval(args()) === true;
  } catch {
    return true;
  }
}

/** Characters per page returned by `context_reload`. */
export const RELOAD_PAGE_CHARS = 8_000;

/** Built in: reads stored content of this agent back, a page at a time. */
export const contextReload = defineTool({
  name: 'context_reload',
  description:
    'Reload content that was moved out of the context (offloaded or truncated). Pass the reference named in the ' +
    `marker and a page number (1-based); each page holds up to ${RELOAD_PAGE_CHARS} characters.`,
  parameters: {
    type: 'object',
    properties: {
      reference: { type: 'string', description: 'The storage reference from the marker' },
      page: { type: 'integer', minimum: 1, description: 'Page number, starting at 1' },
    },
    required: ['reference'],
  },
  run: async (args, { store, ...agent }) => {
    const reference = typeof args.reference === 'string' ? args.reference : '';
    const page = args.page === undefined ? 1 : Number(args.page);
    if (!reference.startsWith(lifePrefix(agent)) || reference.includes('..')) {
      throw new ToolInputError(`reference ${JSON.stringify(reference)} is not stored content of this agent`);
    }
    if (!Number.isInteger(page) || page < 1) {
      throw new ToolInputError(`page must be an integer from 1 (got ${String(args.page)})`);
    }
    const body = await store.get(reference);
    if (body === undefined) throw new ToolInputError(`nothing is stored under ${reference}`);
    const pages = Math.max(1, Math.ceil(body.length / RELOAD_PAGE_CHARS));
    if (page > pages) throw new ToolInputError(`page ${page} is past the end: ${reference} has ${pages} page(s)`);
    // Pages meet at the same boundaries, moved off the middle of a surrogate pair: their concatenation is the body.
    const text = safeSlice(body, (page - 1) * RELOAD_PAGE_CHARS, page * RELOAD_PAGE_CHARS);
    return `[${reference} · page ${page} of ${pages}]\n${text}`;
  },
});

/** Built in: full-text search over everything this agent's life stored (storage/search-index.ts). */
export const contextSearch = defineTool({
  name: 'context_search',
  description:
    'Full-text search of everything stored in this conversation, also what left the context. Returns matches with ' +
    'a snippet and the reference for context_reload.',
  parameters: {
    type: 'object',
    properties: {
      query: { type: 'string', description: 'The words to find' },
      limit: { type: 'integer', minimum: SEARCH_LIMITS.limit.min, maximum: SEARCH_LIMITS.limit.max },
    },
    required: ['query'],
  },
  run: async (args, { store, ...agent }) => {
    const query = args.query;
    const limit = args.limit === undefined ? undefined : Number(args.limit);
    try {
      const matches = await searchIndexOf(store).search(agent, query as string, {
        ...(limit !== undefined ? { limit } : {}),
      });
      return renderMatches(query as string, matches);
    } catch (error) {
      if (error instanceof SearchInputError) throw new ToolInputError(error.message);
      throw error;
    }
  },
});

/**
 * The built-in tools the agent's workflow answers itself (workflows/context-tools.ts): `context_pin` and
 * `context_budget`. Registered like any tool, so the model sees their schemas; their calls never reach `runTool` in a
 * turn of this release. Should one come from a turn recorded before (every call ran as an activity), its result
 * says so.
 */
const answeredByWorkflow = (name: string) => () =>
  Promise.reject(new ToolInputError(`${name} is answered by the agent's workflow; this call could not reach it`));

/** Built in: pins a message of the context, or a text, so every compaction keeps it verbatim. */
export const contextPin = defineTool({
  name: 'context_pin',
  description:
    'Keep something word for word through every compaction of your context. Give text, or message_id (e.g. ' +
    'm000012). Pins count against a pin budget.',
  parameters: {
    type: 'object',
    properties: { text: { type: 'string' }, message_id: { type: 'string' } },
  },
  run: answeredByWorkflow('context_pin'),
});

/** Built in: the budget figures (the same as the budget note's). */
export const contextBudget = defineTool({
  name: 'context_budget',
  description:
    'Your context budget: tokens used of the window, steps and tokens left in this turn, pins, last compaction.',
  parameters: { type: 'object', properties: {} },
  run: answeredByWorkflow('context_budget'),
});

/** Built in: delegates a task to a sub-agent (a child agent workflow); its schema is sent only to agents with `delegation`. */
export const delegateTool = defineTool({
  name: DELEGATE_TOOL,
  description:
    'Delegate a self-contained task to a sub-agent with a fresh context and the same tools. It works on its own and ' +
    'returns only its final answer and a list of the tool calls it made; what it read stays out of your context. ' +
    'Write the task fully: the sub-agent sees nothing of this conversation.',
  parameters: {
    type: 'object',
    properties: {
      task: { type: 'string', description: 'The task, with everything the sub-agent needs to know' },
      max_steps: { type: 'integer', minimum: 1, description: 'Model calls the sub-agent may make (optional)' },
    },
    required: ['task'],
  },
  run: answeredByWorkflow(DELEGATE_TOOL),
});

/**
 * A team's own sub-agent, as a tool the model calls with a task: registered with the worker like any tool
 * (`createAgentWorker({ tools: [delegateTo({...})] })`), its calls are answered by the agent's workflow, which starts
 * a child agent workflow with these settings on the task and answers with the child's final answer and manifest.
 * Bad settings throw here, naming the tool and the field.
 *
 * @example
 *   const researcher = delegateTo({
 *     name: 'research',
 *     description: 'Researches a question in the docs and answers it',
 *     model: 'gpt-4o-mini',
 *     tools: ['read_file', 'grep'],
 *     turnBudget: { steps: 30 },
 *   });
 */
export function delegateTo(
  options: ChildSettings & { name: string; description: string; approval?: ToolDefinition['approval'] },
): ToolDefinition {
  const { name, description, approval, ...settings } = options;
  validateDelegation(settings, `delegateTo(${JSON.stringify(name)})`);
  return defineTool({
    name,
    description,
    parameters: {
      type: 'object',
      properties: {
        task: { type: 'string', description: 'The task, with everything the sub-agent needs to know' },
        max_steps: { type: 'integer', minimum: 1, description: 'Model calls the sub-agent may make (optional)' },
      },
      required: ['task'],
    },
    ...(approval !== undefined ? { approval } : {}),
    delegation: settings,
    run: answeredByWorkflow(name),
  });
}

/** Whether a tool's schema goes to an agent's model: the built-in `delegate` only to agents with `delegation`. */
export function selected(name: string, builtIn: boolean, selection: ToolSelection | undefined): boolean {
  if (name === DELEGATE_TOOL && builtIn) return selection?.delegate === true;
  if (builtIn || selection?.only === undefined) return true;
  return selection.only.includes(name);
}

const BUILT_IN: ReadonlySet<ToolDefinition> = new Set([
  contextReload,
  contextSearch,
  contextPin,
  contextBudget,
  delegateTool,
]);

export class ToolRegistry {
  private readonly tools = new Map<string, ToolDefinition>();

  private readonly fallback: ToolDefinition['run'] | undefined;

  /**
   * `fallback` answers calls of tools that are not registered (the replay command answers them from a recording);
   * without it, such a call gets an error result the model can read.
   */
  constructor(tools: readonly ToolDefinition[] = [], options: { fallback?: ToolDefinition['run'] } = {}) {
    this.fallback = options.fallback;
    for (const tool of [contextReload, contextSearch, contextPin, contextBudget, delegateTool, ...tools]) {
      if (this.tools.has(tool.name)) throw new Error(`tool ${tool.name} is defined twice`);
      this.tools.set(tool.name, tool);
    }
  }

  get(name: string): ToolDefinition | undefined {
    const tool = this.tools.get(name);
    if (tool || !this.fallback) return tool;
    return { name, description: '', parameters: { type: 'object' }, run: this.fallback };
  }

  /**
   * The names of the tools a model sees, as {@link schemas} gives them (the built-in ones first: context_reload,
   * context_search, context_pin, context_budget; `delegate` only with a selection that has it).
   */
  names(selection?: ToolSelection): string[] {
    return [...this.tools.values()]
      .filter((tool) => selected(tool.name, BUILT_IN.has(tool), selection))
      .map((tool) => tool.name);
  }

  /** The schemas the model sees: all but `delegate`, or those of an agent's `selection` (its `delegation`, `tools`). */
  schemas(selection?: ToolSelection): ToolSchema[] {
    return [...this.tools.values()]
      .filter((tool) => selected(tool.name, BUILT_IN.has(tool), selection))
      .map((tool) => ({
        type: 'function',
        function: { name: tool.name, description: tool.description, parameters: tool.parameters },
      }));
  }
}
