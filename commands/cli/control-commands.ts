/**
 * The handlers of the commands that reach an agent while it works: steer the turn in progress, interrupt it, list
 * the tool calls waiting for approval and answer them (client/control.ts). Input the workflow would refuse for its
 * shape or size is refused here, before anything is sent (exit 2); a call that does not wait only the workflow can
 * refuse (exit 1, "rejected").
 */
import type { Client } from '@temporalio/client';
import { approveTool, awaitingApproval, denyTool, interruptAgent, steerAgent } from '../../client/control.ts';
import { updateStage } from '../../client/updates.ts';
import type { UpdateStage } from '../../client/updates.ts';
import { validateInterruptInput, validateSteerInput, validateToolDecisionInput } from '../../contract/input-checks.ts';
import { listenForStop } from '../../worker/stopping.ts';
import { renderApprovals, renderInterrupt, renderSteer, renderToolDecision } from '../render.ts';
import { waitOptions, withClient } from './connection.ts';
import { EXIT } from './parse.ts';
import type { Invocation } from './parse.ts';

export async function steer({ args, values, out }: Invocation): Promise<number> {
  const agentId = args.agent!;
  const text = args.text!;
  validateSteerInput({ text }); // what the workflow would refuse or drop is never sent
  if (values['no-wait']) {
    await withClient((client) => steerAgent(client, agentId, text, { wait: false }));
    out(`steer sent to ${agentId}: it lands at the turn's next step boundary (or opens a turn on an idle agent)`);
    return EXIT.ok;
  }
  const result = await withClient((client) =>
    whileWaiting(client, agentId, 'steer', (onSent) => steerAgent(client, agentId, text, { ...waitOptions(), onSent })),
  );
  out(values.json ? JSON.stringify(result) : renderSteer(result));
  return EXIT.ok;
}

export async function interrupt({ args, values, out }: Invocation): Promise<number> {
  const agentId = args.agent!;
  const text = args.text;
  const input = text !== undefined ? { text } : {};
  validateInterruptInput(input);
  if (values['no-wait']) {
    await withClient((client) => interruptAgent(client, agentId, { ...input, wait: false }));
    out(
      `interrupt sent to ${agentId}: the turn in progress ends at once` +
        (text !== undefined ? ', and the next one opens with the text' : ''),
    );
    return EXIT.ok;
  }
  const result = await withClient((client) =>
    whileWaiting(client, agentId, 'interrupt', (onSent) =>
      interruptAgent(client, agentId, { ...input, ...waitOptions(), onSent }),
    ),
  );
  out(values.json ? JSON.stringify(result) : renderInterrupt(result));
  return EXIT.ok;
}

export async function tools({ args, values, out }: Invocation): Promise<number> {
  const agentId = args.agent!;
  const calls = await withClient((client) => awaitingApproval(client, agentId));
  out(values.json ? JSON.stringify(calls, null, 2) : renderApprovals(calls, agentId, Date.now()));
  return EXIT.ok;
}

export async function approveToolCall({ args, values, out }: Invocation): Promise<number> {
  const { agent: agentId, callId } = args as { agent: string; callId: string };
  validateToolDecisionInput({ callId }); // a call id that cannot be one is never sent
  const result = await withClient((client) => approveTool(client, agentId, callId, waitOptions()));
  out(values.json ? JSON.stringify(result) : renderToolDecision(result));
  return EXIT.ok;
}

export async function denyToolCall({ args, values, out }: Invocation): Promise<number> {
  const { agent: agentId, callId, reason } = args as { agent: string; callId: string; reason?: string };
  validateToolDecisionInput({ callId, ...(reason !== undefined ? { reason } : {}) });
  const result = await withClient((client) => denyTool(client, agentId, callId, reason, waitOptions()));
  out(values.json ? JSON.stringify(result) : renderToolDecision(result, reason));
  return EXIT.ok;
}

/**
 * Runs `wait` (a steer or an interrupt sent as an Update) with Ctrl-C saying what became of it before exiting 130, as
 * `send` does for a message: once sent, the Update's id and whether the agent has it; before, that nothing was sent.
 */
async function whileWaiting<T>(
  client: Client,
  agentId: string,
  what: 'steer' | 'interrupt',
  wait: (onSent: (updateId: string) => void) => Promise<T>,
): Promise<T> {
  let updateId: string | undefined;
  const signals = listenForStop(); // a second Ctrl-C (not npm's copy of the first) exits at once
  void signals.first.then(async () => {
    if (updateId === undefined) {
      console.error(`longrun: interrupted before the ${what} was sent: nothing was delivered to ${agentId}`);
    } else {
      const stage = await updateStage(client, agentId, updateId, 2_000);
      console.error(`longrun: interrupted; ${sentControlFate(agentId, what, updateId, stage)}`);
    }
    process.exit(EXIT.interrupted);
  });
  try {
    return await wait((id) => (updateId = id));
  } finally {
    signals.dispose();
  }
}

/** What became of a steer or an interrupt whose command was interrupted by Ctrl-C, in words. */
export function sentControlFate(
  agentId: string,
  what: 'steer' | 'interrupt',
  updateId: string,
  stage: UpdateStage,
): string {
  const read = `\`longrun watch ${agentId}\` follows the agent`;
  switch (stage) {
    case 'completed':
    case 'accepted':
      return `the ${what} was delivered to ${agentId} (update ${updateId}) and takes effect: do not send it again; ${read}`;
    case 'not accepted yet':
      return (
        `the ${what} was sent to ${agentId} (update ${updateId}) and waits for the agent to take it: do not send ` +
        `it again while it waits; ${read}`
      );
    case 'not found':
      return `the ${what} sent as update ${updateId} is not on the server: ${agentId} did not get it; send it again`;
    case 'unknown':
      return (
        `the ${what} was sent to ${agentId} as update ${updateId}; Temporal did not say whether the agent has it: ` +
        `read \`longrun state ${agentId}\` before sending it again`
      );
  }
}
