// A team's own worker: longrun's agent workflows with the team's tool and model endpoint.
// Temporal, S3 and the task queue come from the environment (TEMPORAL_ADDRESS, AWS_ENDPOINT_URL_S3, LONGRUN_*).
import { runAgentWorker, SettingsError } from 'longrun/worker';
import { defineTool, ToolInputError } from 'longrun/tools';

const forecast = defineTool({
  name: 'forecast',
  description: 'Tomorrow’s hourly weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  run: async ({ city }) => {
    if (typeof city !== 'string' || city === '') throw new ToolInputError('city must be a non-empty string');
    const hours = Array.from({ length: 24 }, (_, hour) => `${hour}:00 light rain, ${8 + (hour % 7)} °C`);
    return `${city} tomorrow\n${hours.join('\n')}`;
  },
});

await runAgentWorker({
  tools: [forecast],
  model: { baseURL: process.env.TEAM_MODEL_URL, apiKey: process.env.TEAM_MODEL_KEY },
}).catch((error: unknown) => {
  // A setting longrun cannot use (no model key, a bad LONGRUN_* value) names the variable: one line, no stack.
  console.error(error instanceof SettingsError ? `worker: ${error.message}` : error);
  process.exit(1);
});
