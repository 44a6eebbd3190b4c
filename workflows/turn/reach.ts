/**
 * What reaches a turn while it works, from the agent's loop (agent.ts): the inbox, which hands the turn what applies
 * at its step boundaries (steers join the step's request, an interrupt ends the turn, queued work is done:
 * workflows/inbox.ts `atBoundary`); the step's activities an interrupt cancels and the approvals waiting
 * (control.ts); and the agent's approval and delegation settings.
 */
import { DEFAULT_APPROVAL_SECONDS } from '../../contract/inputs.ts';
import type { AgentInput, DelegationSettings } from '../../contract/inputs.ts';
import type { Inbox, PendingOf } from '../inbox.ts';
import type { TurnControl } from './control.ts';
import type { TurnHandOver } from '../hand-over.ts';

export interface TurnReach {
  control: TurnControl;
  /** What was sent to the agent: the inputs the turn takes at its step boundaries, answered through it. */
  inbox: Inbox;
  /** The steer that opens this turn (it came to an idle agent). */
  opener?: PendingOf<'steer'>;
  /** The tools whose calls wait for approval by name, how long, and what then (the agent's `toolApproval`). */
  approval: { tools: ReadonlySet<string>; timeoutMs: number; onTimeout: 'deny' | 'approve' };
  /** The agent's `delegation` (the built-in `delegate` tool is on): what its children start with. */
  delegation?: DelegationSettings;
  /** Whether the run hands over at a step boundary (its history budget reached: workflows/hand-over.ts). */
  handOver?: TurnHandOver;
}

/** What reaches the turns of an agent started with `input`, its inbox and its turn control. */
export function reachOf(input: AgentInput, inbox: Inbox, control: TurnControl): TurnReach {
  return {
    control,
    inbox,
    approval: approvalOf(input),
    ...(input.delegation ? { delegation: input.delegation } : {}),
  };
}

/** The agent's approval settings as a turn uses them. */
function approvalOf(input: AgentInput): TurnReach['approval'] {
  const settings = input.toolApproval;
  return {
    tools: new Set(settings?.tools ?? []),
    timeoutMs: (settings?.timeoutSeconds ?? DEFAULT_APPROVAL_SECONDS) * 1000,
    onTimeout: settings?.onTimeout ?? 'deny',
  };
}
