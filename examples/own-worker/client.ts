// Start an agent with the team's system prompt, ask it about four cities, force a compaction and print the events.
import {
  compactAgent,
  compactionEvents,
  connectClient,
  loadTemporalTarget,
  sendMessage,
  startAgent,
} from 'longrun/client';

const agentId = process.argv[2] ?? `forecaster-${Date.now()}`;
const client = await connectClient(loadTemporalTarget());
await startAgent(client, {
  agentId,
  model: 'gpt-4o-mini',
  taskQueue: process.env.LONGRUN_TASK_QUEUE ?? 'longrun-agents',
  systemPrompt: 'You are the field team’s weather desk. Check the forecast tool before you answer.',
  // Protect only the last exchange, so that this short conversation has something to compact.
  compaction: { keepTurns: 1, reserveRatio: 0 },
});
for (const city of ['Bergen', 'Oslo', 'Tromsø', 'Stavanger']) {
  const { reply } = await sendMessage(client, agentId, `Do we need rain gear in ${city} tomorrow?`);
  console.log(`${city}: ${reply}`);
}

const { compacted, reason } = await compactAgent(client, agentId, { strategy: 'summarize' });
console.log(`compaction: ${compacted ? 'done' : 'skipped'} (${reason})`);
for (const event of await compactionEvents(client, agentId)) {
  console.log(`event ${event.seq}: ${event.strategies.join('+')}, ${event.tokensBefore} → ${event.tokensAfter} tokens`);
}
await client.connection.close();
