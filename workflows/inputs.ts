/**
 * What the agent's handlers accept: the contract's checks of an input, and the checks that depend on the agent now
 * (closed, the turn a message would open). A rejection is a typed failure (contract/failures.ts: invalid input, or the agent closed)
 * whose message names the field and the limit.
 */
import { quoted } from '../contract/inputs.ts';
import {
  validateAgentInput,
  validateCompactInput,
  validateConfigureInput,
  validateDraftInput,
  validateRevertInput,
  validateInterruptInput,
  validateSendInput,
  validateSteerInput,
  validateToolDecisionInput,
} from '../contract/input-checks.ts';
import type {
  AgentInput,
  ApproveInput,
  CompactInput,
  ConfigureInput,
  DiscardInput,
  InterruptInput,
  RevertInput,
  SendInput,
  SteerInput,
  ToolDecisionInput,
} from '../contract/inputs.ts';
import type { WorkflowState } from '../contract/state.ts';
import type { ModelInfo, ModelOverride } from '../engine/models.ts';
import { agentClosed, invalidInput } from '../contract/failures.ts';
import { validateDelegationInput } from '../contract/delegation.ts';

/** A new agent's input (a running or reopened agent keeps the input it was started with). */
export function checkAgentInput(input: AgentInput): void {
  asInvalidInput(() => {
    validateAgentInput(input);
    validateDelegationInput(input);
  });
}

/** Rejects a compaction request with a clear error naming the field (the input's rules are the contract's). */
export function checkCompact(request: CompactInput, state: WorkflowState, closing: boolean): void {
  if (state.status === 'closed' || closing) throw agentClosed(state.agentId);
  asInvalidInput(() => validateCompactInput(request));
}

/**
 * Rejects `approve` or `discard` of a draft that is not the pending one, and an approve of a stale draft (`stale`:
 * why the pending draft's context has changed since it was made, if it has).
 */
export function checkDraft(
  request: ApproveInput | DiscardInput,
  state: WorkflowState,
  closing: boolean,
  approving: boolean,
  stale: string | undefined,
): void {
  if (state.status === 'closed' || closing) throw agentClosed(state.agentId);
  asInvalidInput(() => validateDraftInput(request, state.draft ? state.draft.info : null, state.lastDraft));
  if (stale !== undefined && approving) {
    throw invalidInput(`draft: ${request.draft} is stale, made for a context that has changed: ${stale}`);
  }
}

/**
 * Rejects a `configure` of a closed agent or of the wrong shape, naming the setting. Whether the model is known and
 * counted as the agent's messages are is the loop's check, on the `describeModel` activity's answer
 * (workflows/configure.ts): the model registry is not workflow code.
 */
export function checkConfigure(request: ConfigureInput, state: WorkflowState, closing: boolean): void {
  if (state.status === 'closed' || closing) throw agentClosed(state.agentId);
  asInvalidInput(() => validateConfigureInput(request));
}

/**
 * The model and the override a `configure` asks the `describeModel` activity for: the same model keeps its encoding,
 * margin and price (a new window only); a new model takes its own from the registry, with `window` when given.
 */
export function configuredModel(
  request: ConfigureInput,
  state: Pick<WorkflowState, 'model' | 'modelInfo'>,
): { model: string; override: ModelOverride } {
  const now = state.modelInfo!;
  const model = request.model ?? state.model;
  const window = request.window !== undefined ? { window: request.window } : {};
  // (The same model keeps its price too, the agent's own included; a new model is priced by the registry.)
  const same: ModelOverride = { window: now.window, encoding: now.encoding, margin: now.margin };
  if (now.price) same.price = now.price;
  const override: ModelOverride = model === state.model ? { ...same, ...window } : window;
  return { model, override };
}

/**
 * Why a model described as `info` cannot take over from the agent's (`now`): it counts tokens otherwise (another
 * encoding or margin), so the counts of the messages in the context would be wrong. Undefined when it can.
 */
export function countingRefusal(model: string, info: ModelInfo, now: ModelInfo): string | undefined {
  if (info.encoding === now.encoding && info.margin === now.margin) return undefined;
  const counted = (i: ModelInfo) => `${i.encoding} × ${i.margin}`;
  return (
    `model: ${quoted(model)} counts tokens as ${counted(info)}, this agent's messages were counted as ` +
    `${counted(now)}: configure cannot change how tokens are counted (start a new agent for that model)`
  );
}

/** Rejects a revert to an event the agent does not have (or bad input), naming the field and the range. */
export function checkRevert(request: RevertInput, state: WorkflowState, closing: boolean): void {
  if (state.status === 'closed' || closing) throw agentClosed(state.agentId);
  asInvalidInput(() => validateRevertInput(request, state.compactions ?? 0));
}

/**
 * Rejects bad input before it enters history; each message names the field and the limit. `nextTurn` is the turn
 * this message would open, checked against the sender's `expectedTurn`.
 */
export function checkSend(send: SendInput, state: WorkflowState, closing: boolean, nextTurn: number): void {
  if (state.status === 'closed' || closing) throw agentClosed(state.agentId);
  asInvalidInput(() => validateSendInput(send));
  if (send.expectedTurn !== undefined && send.expectedTurn !== nextTurn) {
    throw invalidInput(
      `expectedTurn: this message would open turn ${nextTurn}, not ${send.expectedTurn} ` +
        '(another message came first; read the state and try again)',
    );
  }
}

/** Checks a steer: a message's text, to an agent that is not closed or closing. */
export function checkSteer(steer: SteerInput, state: WorkflowState, closing: boolean): void {
  if (state.status === 'closed' || closing) throw agentClosed(state.agentId);
  asInvalidInput(() => validateSteerInput(steer));
}

/**
 * Checks an interrupt: any agent not closed may be interrupted (a closing one finishes sooner); its text would open
 * a turn, which a closing agent does not take.
 */
export function checkInterrupt(request: InterruptInput | undefined, state: WorkflowState, closing: boolean): void {
  if (state.status === 'closed') throw agentClosed(state.agentId);
  asInvalidInput(() => validateInterruptInput(request));
  if (closing && request?.text !== undefined) {
    throw invalidInput(
      'text: the agent is closing, so no turn opens with it (interrupt without text to stop the turn)',
    );
  }
}

/**
 * Checks `approveTool` / `denyTool`: a call of the turn in progress waiting for approval, not yet answered.
 * `waiting` are the call ids that wait (workflows/turn/control.ts).
 */
export function checkToolDecision(request: ToolDecisionInput, state: WorkflowState, waiting: string[]): void {
  if (state.status === 'closed') throw agentClosed(state.agentId);
  asInvalidInput(() => validateToolDecisionInput(request));
  if (!waiting.includes(request.callId)) {
    const now = waiting.length ? `the calls waiting: ${waiting.join(', ')}` : 'no tool call is waiting for approval';
    throw invalidInput(`callId: ${request.callId} is not waiting for approval (${now})`);
  }
}

/** Runs a contract check; what it rejects is thrown as an invalid-input failure, its message kept. */
function asInvalidInput(check: () => void): void {
  try {
    check();
  } catch (error) {
    throw invalidInput((error as Error).message);
  }
}
