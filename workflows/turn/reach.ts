/**
 * What reaches a turn while it works, from the agent's loop (agent.ts): the inputs it takes at its step boundaries
 * (steers, an interrupt, queued work: boundary.ts), the step's activities an interrupt cancels and the approvals
 * waiting (control.ts), and the agent's approval and delegation settings.
 */
import { DEFAULT_APPROVAL_SECONDS } from '../../contract/inputs.ts';
import type { InterruptResult, SteerResult } from '../../contract/results.ts';
import type { PendingOf } from '../inbox.ts';
import type { TurnControl } from './control.ts';
import type { AgentInput } from '../../contract/inputs.ts';
import type { DelegationSettings } from '../../contract/inputs.ts';
import { delegate } from '../delegation.ts';

/** What reaches a turn while it works (issue 28), from the agent's loop (agent.ts). */
export interface TurnReach {
  control: TurnControl;
  /** An input the turn takes at its next step boundary is queued. */
  boundaryQueued: () => boolean;
  /**
   * Does the inputs queued for a step boundary (forced compactions, reviews, reverts) in their order and returns the
   * turn's own: the steers to add to it, and an interrupt (taken first).
   */
  atBoundary: () => Promise<{ steers: PendingOf<'steer'>[]; interrupt?: PendingOf<'interrupt'> }>;
  interruptQueued: () => boolean;
  takeInterrupt: () => PendingOf<'interrupt'> | undefined;
  /** Answers a steer where it landed, or the interrupt once the turn has ended. */
  answer: (pending: PendingOf<'steer'> | PendingOf<'interrupt'>, result: SteerResult | InterruptResult) => void;
  /** Queues the interrupt's text as the next turn's message; returns the turn it opens. */
  openNext: (text: string) => number;
  /** The steer that opens this turn (it came to an idle agent). */
  opener?: PendingOf<'steer'>;
  /** The tools whose calls wait for approval by name, how long, and what then (the agent's `toolApproval`). */
  approval: { tools: ReadonlySet<string>; timeoutMs: number; onTimeout: 'deny' | 'approve' };
  /** The agent's `delegation` (the built-in `delegate` tool is on): what its children start with. */
  delegation?: DelegationSettings;
}

/** The agent's approval settings as a turn uses them. */
export function approvalOf(input: AgentInput): TurnReach['approval'] {
  const settings = input.toolApproval;
  return {
    tools: new Set(settings?.tools ?? []),
    timeoutMs: (settings?.timeoutSeconds ?? DEFAULT_APPROVAL_SECONDS) * 1000,
    onTimeout: settings?.onTimeout ?? 'deny',
  };
}
