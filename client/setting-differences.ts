/**
 * What `startAgent` (client/agents.ts) compares when the agent is running already: the settings asked for (model,
 * window, system prompt) against the running agent's, and the error naming each difference with the
 * `longrun configure` flags that would change it.
 */
import { quoted } from '../contract/inputs.ts';
import type { AgentInput, SettingName } from '../contract/inputs.ts';
import type { AgentState } from '../contract/state.ts';

/** A setting `startAgent` was given that the running agent has otherwise. */
export interface SettingDifference {
  setting: SettingName;
  /** The running agent's (a system prompt as its text). */
  running: string | number | undefined;
  asked: string | number;
}

/**
 * Thrown by `startAgent` when the agent is running already with another model, window or system prompt than it was
 * given: nothing was applied (starting never changes a running agent). `differences` names each; change them with
 * `configureAgent` (`longrun configure`).
 */
export class AgentSettingsDifferError extends Error {
  readonly agentId: string;
  readonly differences: SettingDifference[];
  constructor(agentId: string, differences: SettingDifference[]) {
    const flags = differences.map((d) => `${SETTING_FLAGS[d.setting]} ${shownSetting(d.asked, true)}`).join(' ');
    super(
      `agent ${agentId} is running already, with other settings; not applied: ` +
        `${differences.map((d) => `${d.setting} ${shownSetting(d.running)} (asked ${shownSetting(d.asked)})`).join(', ')}. ` +
        `To change them: longrun configure ${agentId} ${flags} (configureAgent() in the client library)`,
    );
    this.name = 'AgentSettingsDifferError';
    this.agentId = agentId;
    this.differences = differences;
  }
}

/** Each setting's flag of `longrun configure`. */
const SETTING_FLAGS: Record<SettingName, string> = { model: '--model', window: '--window', systemPrompt: '--system' };

/** A setting's value in a message: a number as it is, a text quoted (cut when long: a system prompt). */
function shownSetting(value: string | number | undefined, asFlag = false): string {
  if (value === undefined) return 'none';
  if (typeof value === 'number') return String(value);
  return asFlag && /^[\w.:/-]+$/.test(value) ? value : quoted(value);
}

/**
 * The settings of `asked` the running agent (its state) has otherwise: the model always, the window and the system
 * prompt when asked for.
 */
export function settingDifferences(
  asked: Pick<AgentInput, 'model' | 'systemPrompt' | 'modelOverride'>,
  running: Pick<AgentState, 'model' | 'modelInfo' | 'systemPrompt'>,
): SettingDifference[] {
  const differences: SettingDifference[] = [];
  if (asked.model !== running.model) differences.push({ setting: 'model', running: running.model, asked: asked.model });
  const window = asked.modelOverride?.window;
  if (window !== undefined && running.modelInfo && window !== running.modelInfo.window) {
    differences.push({ setting: 'window', running: running.modelInfo.window, asked: window });
  }
  if (asked.systemPrompt !== undefined && asked.systemPrompt !== running.systemPrompt) {
    differences.push({ setting: 'systemPrompt', running: running.systemPrompt, asked: asked.systemPrompt });
  }
  return differences;
}
