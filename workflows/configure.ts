/**
 * The `configure` Update's work: a running agent's model, window and system prompt changed, in the loop's turn.
 *
 * A smaller window the context would not fit compacts first (a forced compaction, planned for the new window), while
 * the agent's model is still the one before, as Claude Code and the Copilot SDK do on a model switch; the settings
 * change only once the context fits. What changed is in the state, so continue-as-new carries it.
 */
import { ActivityFailure, ApplicationFailure, upsertSearchAttributes } from '@temporalio/workflow';
import { describeModel, STORE_OPTIONS } from './activities.ts';
import { compactionPolicyOf, toolSelectionOf } from '../contract/inputs.ts';
import type { AgentInput, ConfigureInput } from '../contract/inputs.ts';
import type { CompactResult, ConfigureResult, SettingChange } from '../contract/results.ts';
import type { DescribeModelInput } from '../contract/activities.ts';
import type { ModelOverride } from '../engine/models.ts';
import { SEARCH_ATTRIBUTES } from '../contract/search-attributes.ts';
import { FAILURE } from '../contract/failures.ts';
import type { Compactions } from './compaction.ts';
import type { Conversation } from './conversation.ts';
import { SettingsRefused } from './inbox.ts';
import { configuredModel, countingRefusal } from './inputs.ts';
import { showDetails } from './visibility.ts';

/** Applies `request` to the agent (checked by the Update's validator); resolves to what changed. */
export async function configure(
  conversation: Conversation,
  compactions: Compactions,
  input: AgentInput,
  request: ConfigureInput,
): Promise<ConfigureResult> {
  const { state } = conversation;
  const before = { model: state.model, window: conversation.window, systemPrompt: state.systemPrompt };
  const wanted = configuredModel(request, state);
  const changed: SettingChange[] = [];
  let compaction: CompactResult | undefined;
  if (wanted.model !== before.model || request.window !== undefined) {
    const description = await describeModelFor(input, wanted, ' (configure)').catch((error: unknown) => {
      // An unknown model, a bad override: the registry's answer, refused as the setting's.
      const cause = error instanceof ActivityFailure ? error.cause : undefined;
      if (cause instanceof ApplicationFailure && cause.type === FAILURE.badConfiguration) {
        throw new SettingsRefused(`model: ${cause.message}`);
      }
      throw error;
    });
    const { info } = description;
    const refused = countingRefusal(wanted.model, info, state.modelInfo!);
    if (refused !== undefined) throw new SettingsRefused(refused);
    const kept = conversation.modelSettings();
    // The window first, the model after: a compaction the smaller window needs is planned for it, the model before.
    conversation.configured({ info, gate: description.gate });
    if (info.window < before.window && conversation.compactionDue() !== undefined) {
      try {
        compaction = await compactions.compact('forced', conversation.tailSeq);
      } catch (error) {
        conversation.configured(kept);
        throw error;
      }
      if (state.contextTokens > info.window) {
        conversation.configured(kept);
        throw new SettingsRefused(
          `window: the context holds ${state.contextTokens} tokens, over the new window of ${info.window} even ` +
            `after compacting (${compaction.compacted ? `compaction ${compaction.event?.seq}` : compaction.reason}): ` +
            `the settings stay ${before.model}, ${before.window} tokens`,
        );
      }
    }
    if (info.window !== before.window) changed.push({ setting: 'window', from: before.window, to: info.window });
    if (wanted.model !== before.model) {
      conversation.configured({ model: wanted.model });
      changed.unshift({ setting: 'model', from: before.model, to: wanted.model });
      upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.model, value: wanted.model }]);
    }
  }
  if (request.systemPrompt !== undefined && request.systemPrompt !== before.systemPrompt) {
    conversation.configured({ systemPrompt: request.systemPrompt });
    changed.push({ setting: 'systemPrompt', from: before.systemPrompt, to: request.systemPrompt });
  }
  showDetails(state, conversation.progress);
  return {
    changed,
    compacted: compaction?.compacted ?? false,
    ...(compaction ? { compaction } : {}),
    settings: { model: state.model, window: conversation.window },
  };
}

/**
 * The model's description (window, counting, policy, gate), resolved by an activity so that a change to the model
 * registry never breaks replay: for the agent's start (`input.model`) or for a `configure` (`wanted`).
 */
export function describeModelFor(
  input: AgentInput,
  wanted: { model: string; override?: ModelOverride | undefined } = {
    model: input.model,
    override: input.modelOverride,
  },
  why = '',
) {
  const policy = compactionPolicyOf(input);
  const tools = toolSelectionOf(input);
  const request: DescribeModelInput = {
    ...(tools ? { tools } : {}),
    model: wanted.model,
    ...(wanted.override ? { override: wanted.override } : {}),
    ...(policy ? { compaction: policy } : {}),
  };
  return describeModel.executeWithOptions({ ...STORE_OPTIONS, summary: `describe model ${wanted.model}${why}` }, [
    request,
  ]);
}
