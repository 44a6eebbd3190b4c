/**
 * A tool call run by its tool: the call's arguments parsed (a JSON object, or an error result the model can read),
 * the tool run, and what it returned checked to be text. Also the arguments a tool's approval rule sees.
 */
import { log } from '@temporalio/activity';
import { quoted } from '../contract/inputs.ts';
import type { ToolCall } from '../engine/messages.ts';
import { kindOf } from './model-reply.ts';
import { ToolInputError } from './tools.ts';
import type { ToolContext, ToolDefinition, ToolRegistry } from './tools.ts';

/**
 * Runs a tool call. An unknown tool (the result names the tools there are), arguments that are not a JSON object, or
 * a {@link ToolInputError} become an error result the model can read, so the call is always answered; any other error
 * fails the attempt and Temporal retries it. A tool whose `run` resolves to anything but a string breaks its contract:
 * the call is answered with an error result naming the tool and what it returned (not retried: running it again
 * would return the same), and the worker logs a warning for the tool's author.
 */
export async function runToolCall(
  tools: ToolRegistry,
  tool: ToolDefinition | undefined,
  call: ToolCall,
  context: ToolContext,
): Promise<string> {
  if (!tool) return `error: unknown tool ${quoted(call.function.name)} (the tools: ${tools.names().join(', ')})`;
  let result: unknown;
  try {
    result = await tool.run(parseToolArguments(call), context);
  } catch (error) {
    if (!(error instanceof ToolInputError)) throw error;
    return `error: ${error.message}`;
  }
  if (typeof result === 'string') return result;
  const returned = kindOf(result);
  log.warn(`tool ${tool.name} returned ${returned}, not a string: the call is answered with an error result`, {
    callId: call.id,
  });
  return `error: tool ${tool.name} returned ${returned}, not text (a tool’s run must resolve to a string)`;
}

function parseToolArguments(call: ToolCall): Record<string, unknown> {
  let args: unknown;
  try {
    args = call.function.arguments.trim() === '' ? {} : JSON.parse(call.function.arguments);
  } catch (error) {
    throw new ToolInputError(
      `arguments of ${call.function.name} are not valid JSON (${(error as Error).message}); they must be a JSON object`,
    );
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    throw new ToolInputError(`arguments of ${call.function.name} must be a JSON object`);
  }
  return args as Record<string, unknown>;
}

/** The arguments a tool's approval rule sees: the call's, or none when they are not a JSON object. */
export function argumentsForRule(call: ToolCall): Record<string, unknown> {
  try {
    return parseToolArguments(call);
  } catch {
    return {};
  }
}
