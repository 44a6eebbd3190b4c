/**
 * An activity acts for the agent whose workflow scheduled it, and for no other. Every storage key an activity reads
 * or writes derives from the `agentId` (and life) in its input, so that id must be the one the workflow id names
 * (`agent-<agentId>`, contract/agent.ts `agentWorkflowId`). A workflow started with another agent's id in its input
 * or in a forged carried state (by the temporal CLI or a raw client) would otherwise read and write that agent's
 * objects: its activities fail instead, not retried (InvalidInput), naming both. Activities whose input names no
 * agent (`describeModel`) pass.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { agentWorkflowId } from '../contract/agent.ts';
import { quoted } from '../contract/inputs.ts';
import { FAILURE } from '../contract/failures.ts';

export const ownAgentOnly: ActivityInterceptorsFactory = (context) => ({
  inbound: {
    execute(input, next) {
      const agentId = (input.args[0] as { agentId?: unknown } | null | undefined)?.agentId;
      const workflowId = context.info.workflowExecution?.workflowId;
      const own = typeof agentId === 'string' && workflowId === agentWorkflowId(agentId);
      if (agentId !== undefined && workflowId !== undefined && !own) {
        throw ApplicationFailure.nonRetryable(
          `agentId ${quoted(agentId)} is not the agent of workflow ${workflowId} (agent-<agentId>): ` +
            `${context.info.activityType} reads and writes the objects of its own agent only`,
          FAILURE.invalidInput,
        );
      }
      return next(input);
    },
  },
});
