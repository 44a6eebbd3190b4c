/** The `longrun` command against the real stack: output, --json, and exit codes a script can trust. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentState } from '../../client/agents.ts';
import { turnStoppedReply } from '../../contract/inputs.ts';
import type { AgentState } from '../../contract/state.ts';
import type { CompactionEvent } from '../../contract/results.ts';
import { agentWithCompactions, newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { cliEnv, runLongrun } from '../support/longrun-cli.ts';
import type { CliRun } from '../support/longrun-cli.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness((request) => {
    const messages = request.body.messages;
    // "keep calling tools" loops on a tool (unknown here: each call is answered with an error result).
    if (messages.findLast((m) => m.role === 'user')?.content === 'keep calling tools') {
      const id = `call-${messages.length}`;
      return { content: null, toolCalls: [{ id, type: 'function', function: { name: 'noop', arguments: '{}' } }] };
    }
    return { content: `got ${messages.length} messages` };
  });
});
afterAll(async () => {
  await h?.close();
});

/** Runs the CLI asynchronously: the worker serving it runs in this very process. */
function longrun(...args: string[]): Promise<CliRun> {
  return runLongrun(args, { env: cliEnv(h) });
}

function longrunWithInput(input: string | undefined, ...args: string[]): Promise<CliRun> {
  return runLongrun(args, { env: cliEnv(h), ...(input !== undefined ? { input } : {}) });
}

describe('longrun CLI', () => {
  it('start, send, state (table and --json), close', async () => {
    const agentId = newAgentId('cli');
    expect(await longrun('start', agentId)).toMatchObject({ code: 0, stdout: `started agent ${agentId}\n` });
    const sent = await longrun('send', agentId, 'hello', 'there');
    expect(sent, sent.stderr).toMatchObject({ code: 0, stdout: 'got 1 messages\n' });

    const table = await longrun('state', agentId);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain('status   running');
    expect(table.stdout).toContain('turns    1');
    expect(table.stdout).toMatch(/m000001\s+user\s+\d+\s+11\s+hello there/);
    expect(table.stdout).toMatch(/context {2}\d+ of 128000 tokens/);

    const json = await longrun('state', agentId, '--json');
    const state = JSON.parse(json.stdout) as AgentState;
    expect(state).toMatchObject({ agentId, status: 'running', turns: 1, model: 'gpt-4o-mini' });
    expect(state.messages.map((m) => m.role)).toEqual(['user', 'assistant']);

    expect((await longrun('close', agentId)).code).toBe(0);
  });

  it('exit 3 for an unknown agent, 4 for a closed one, 2 for bad usage', async () => {
    const unknown = await longrun('state', newAgentId('nobody'));
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toContain('unknown agent');

    const agentId = newAgentId('cli');
    expect((await longrun('start', agentId)).code).toBe(0);
    expect((await longrun('close', agentId)).code).toBe(0);
    await h.client.workflow.getHandle(`agent-${agentId}`).result();
    const closed = await longrun('send', agentId, 'hi');
    expect(closed.code).toBe(4);
    expect(closed.stderr).toContain(`agent ${agentId} is closed`);

    expect((await longrun('send', agentId)).code).toBe(2);
    expect((await longrun('state', 'bad id')).code).toBe(2);
    const flag = await longrun('state', agentId, '--bogus');
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain("Unknown option '--bogus'");
    expect((await longrun('frobnicate', 'x')).code).toBe(2);
    // Refused before anything is sent, though the agent is closed: the input itself is bad.
    const draft = await longrun('approve', agentId, 'nope');
    expect(draft).toMatchObject({ code: 2, stdout: '' });
    expect(draft.stderr).toContain('draft: must be a draft id like "draft-1" (got "nope")');
  });

  it('help: every command in a line; a command with --help, its flags', async () => {
    const help = await longrun('help');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^ {2}approve <agent> <draft> +apply the draft/m);
    const send = await longrun('send', '--help');
    expect(send.code).toBe(0);
    expect(send.stdout).toMatch(
      /^Usage: longrun send <agent> <text\.\.\.> \[--no-wait\] \[--expect-turn N\] \[--json\]$/m,
    );
    expect(send.stdout).toMatch(/^ {2}--expect-turn N +only if it opens turn N/m);
    expect((await longrun()).code).toBe(2); // no command: the help, as a usage error
  });

  it('refuses before sending what the workflow would drop or refuse: --no-wait input, bad numbers', async () => {
    const agentId = newAgentId('cli-valid');
    expect((await longrun('start', agentId)).code).toBe(0);
    const long = 'x'.repeat(4_001);
    for (const args of [
      ['compact', agentId, '--instructions', long, '--no-wait'],
      ['compact', agentId, '--instructions', long],
    ]) {
      const result = await longrun(...args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toContain('instructions: 4001 characters is over the limit of 4000');
      expect(result.stdout).toBe('');
    }
    const blank = await longrun('send', agentId, '   ', '--no-wait');
    expect(blank.code).toBe(2);
    expect(blank.stderr).toContain('text: must not be empty');
    // Nothing reached the workflow: no signal was dropped there, no compaction ran.
    const state = JSON.parse((await longrun('state', agentId, '--json')).stdout) as AgentState;
    expect(state.droppedSignals).toBeUndefined();
    expect(state.compactions ?? 0).toBe(0);

    const window = await longrun('start', newAgentId('cli-window'), '--window', 'abc');
    expect(window.code).toBe(2);
    expect(window.stderr).toContain('--window: must be an integer ≥ 1 (got "abc")');
    const steps = await longrun('start', newAgentId('cli-steps'), '--max-steps', '-3');
    expect(steps.code).toBe(2);
    expect(steps.stderr).toContain('--max-steps: must be an integer from 1 to 1000000 (got "-3")');
    const tokens = await longrun('start', newAgentId('cli-steps'), '--max-turn-tokens', '1e12');
    expect(tokens.code).toBe(2);
    expect(tokens.stderr).toContain('--max-turn-tokens: must be an integer from 1 to 1000000000 (got "1e12")');
    const seconds = await longrun('start', newAgentId('cli-steps'), '--max-turn-seconds', '0');
    expect(seconds.code).toBe(2);
    expect(seconds.stderr).toContain('--max-turn-seconds: must be an integer from 1 to 2592000 (got "0")');
    await longrun('close', agentId);
  });

  it('a turn stopped at its budget: the message on stdout, a note on stderr, exit 0; the next message continues', async () => {
    const agentId = newAgentId('cli-budget');
    const started = await longrun('start', agentId, '--max-steps', '3', '--max-turn-seconds', '600');
    expect(started.code, started.stderr).toBe(0);
    const stopped = await longrun('send', agentId, 'keep calling tools');
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(stopped.stdout).toBe(`${turnStoppedReply({ by: 'steps', limit: 3, used: 3 })}\n`);
    expect(stopped.stderr).toContain(
      'longrun: turn 1 stopped at its steps budget (3 of 3 model calls) without a final answer; send another ' +
        'message to continue',
    );
    const json = await longrun('send', agentId, 'keep calling tools', '--json');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ turn: 2, steps: 3, toolCalls: 3, stopped: { by: 'steps' } });
    expect(json.stderr).toContain('turn 2 stopped at its steps budget');
    // 2 turns of user, 3 × (call, result): the next message sees all of it and is answered.
    const next = await longrun('send', agentId, 'go on');
    expect(next).toMatchObject({ code: 0, stdout: 'got 15 messages\n', stderr: '' });
    expect((await longrun('start', agentId, '--reopen', '--max-turn-tokens', '5')).code).toBe(2);
    await longrun('close', agentId);
  });

  it('chat, send --no-wait, context, reload, list and close --wait', async () => {
    const agentId = newAgentId('cli');
    expect((await longrun('start', agentId, '--max-steps', '3')).code).toBe(0);

    // A line the agent refuses (over the message limit) is said on stderr, and the chat reads on; it is not stored.
    const tooLong = 'x'.repeat(200_001);
    const chat = await longrunWithInput(`first line\n\n/state\n${tooLong}\nsecond line\n/quit\n`, 'chat', agentId);
    expect(chat.code, chat.stderr + chat.stdout).toBe(0);
    expect(chat.stdout).toContain('agent > got 1 messages');
    expect(chat.stdout).toContain('turns    1');
    expect(chat.stderr).toContain('text: 200001 characters is over the limit of 200000');
    expect(chat.stdout).toContain('agent > got 3 messages');

    expect(await longrun('send', agentId, 'queued', '--no-wait')).toMatchObject({
      code: 0,
      stdout: `queued for ${agentId}\n`,
    });
    const closed = await longrun('close', agentId, '--wait', '--json');
    expect(closed.code, closed.stderr).toBe(0);
    const final = JSON.parse(closed.stdout) as AgentState;
    expect(final).toMatchObject({ status: 'closed', turns: 3 });

    const context = await longrun('context', agentId, '--json');
    const messages = JSON.parse(context.stdout) as AgentState['messages'];
    expect(messages.map((m) => m.preview)).toEqual([
      'first line',
      'got 1 messages',
      'second line',
      'got 3 messages',
      'queued',
      'got 5 messages',
    ]);
    const table = await longrun('context', agentId);
    expect(table.stdout).toContain(messages[0]!.key);

    const reloaded = await longrun('reload', agentId, messages[0]!.key);
    expect(reloaded.code).toBe(0);
    expect(reloaded.stdout).toBe(`${await h.store.get(messages[0]!.key)}\n`);
    const outside = await longrun('reload', agentId, 'agents/someone-else/messages/m000001.json');
    expect(outside.code).toBe(2);
    expect(outside.stderr).toContain(`is outside agents/${agentId}/`);

    const list = await longrun('list', '--json');
    const agents = JSON.parse(list.stdout) as { agentId: string; status: string }[];
    expect(agents.find((a) => a.agentId === agentId)).toMatchObject({ status: 'closed' });

    expect((await longrun('start', agentId, '--max-steps', '0')).code).toBe(2);
    const unknown = await longrun('start', newAgentId('cli'), '--model', 'my-finetune');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown model "my-finetune"');
    expect((await longrun('start', newAgentId('cli'), '--model', 'my-finetune', '--window', '32768')).code).toBe(0);
  });

  it('start --preset, compact, events (table and --json), and every removed message reloads byte-identical', async () => {
    const agentId = newAgentId('cli');
    expect((await longrun('start', agentId, '--preset', 'agentscope', '--window', '8192')).code).toBe(0);
    const long = 'The build failed in step 3 because the cache key changed. '.repeat(17); // ~1,000 characters
    for (let i = 1; i <= 6; i++) expect((await longrun('send', agentId, `${i}: ${long}`)).code).toBe(0);

    // (Its quoting summary and ledger can outweigh what leaves: asked for even so.)
    const compacted = await longrun('compact', agentId, '--strategy', 'truncate-rounds', '--even-if-larger');
    expect(compacted.code, compacted.stderr).toBe(0);
    expect(compacted.stdout).toMatch(
      /^compaction 1: \d+ → \d+ tokens, 12 → \d+ messages\nstrategies: truncate-rounds\n/,
    );

    const table = await longrun('events', agentId);
    expect(table.stdout).toMatch(/1\s+\S+ \S+\s+forced\s+\d+ → \d+\s+12 → \d+\s+truncate-rounds/);
    expect(table.stdout).toContain('1 compaction(s)');
    const { events, stats } = JSON.parse((await longrun('events', agentId, '--json')).stdout) as {
      events: CompactionEvent[];
      stats: { count: number };
    };
    expect(stats.count).toBe(1);
    expect(events[0]!.removed.length).toBeGreaterThan(0);
    for (const item of events[0]!.removed) {
      const reloaded = await longrun('reload', agentId, item.key);
      expect(reloaded.stdout).toBe(`${await h.store.get(item.key)}\n`);
    }

    const bad = await longrun('compact', agentId, '--strategy', 'fold');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--strategy: "fold" is not one of supersede-tool-results, truncate-tool-results');
    const preset = await longrun('start', newAgentId('cli'), '--preset', 'nope');
    expect(preset.code).toBe(2);
    expect(preset.stderr).toContain('preset: "nope" is not allowed (one of default, astrbot');
  });

  it('start --background sets the soft threshold, or turns background compaction off; a bad ratio is refused', async () => {
    const on = newAgentId('cli');
    expect((await longrun('start', on, '--preset', 'agentscope', '--background', '0.6')).code).toBe(0);
    const off = newAgentId('cli');
    expect((await longrun('start', off, '--background', 'off')).code).toBe(0);
    for (const agentId of [on, off]) expect((await longrun('send', agentId, 'hello')).code).toBe(0);
    expect((await agentState(h.client, on)).policy).toMatchObject({ preset: 'agentscope', backgroundRatio: 0.6 });
    expect((await agentState(h.client, off)).policy).not.toHaveProperty('backgroundRatio');
    const over = await longrun('start', newAgentId('cli'), '--background', '0.85');
    expect(over.code).toBe(2);
    expect(over.stderr).toContain('backgroundRatio: 0.85 is not allowed (a number > 0 and ≤ 0.8)');
    const word = await longrun('start', newAgentId('cli'), '--background', 'soon');
    expect(word.code).toBe(2);
    expect(word.stderr).toContain('--background: must be a share of the window such as 0.7, or off (got "soon")');
  });

  it('events lists every compaction, the older ones from S3; --if-due and --expect-turn', async () => {
    const { agentId, turns } = await agentWithCompactions(h, 'cli', 11);
    const all = JSON.parse((await longrun('events', agentId, '--json')).stdout) as { events: CompactionEvent[] };
    expect(all.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    const first = JSON.parse((await longrun('events', agentId, '--limit', '2', '--json')).stdout) as {
      events: CompactionEvent[];
    };
    expect(first.events.map((e) => e.seq)).toEqual([1, 2]);
    const none = await longrun('events', agentId, '--limit', '0');
    expect(none).toMatchObject({ code: 0 });
    expect(none.stdout).toMatch(/^no events in the range asked for\n11 compaction\(s\)/);
    const negative = await longrun('events', agentId, '--limit', '-1');
    expect(negative.code).toBe(2);
    expect(negative.stderr).toContain('--limit: must be an integer ≥ 0 (got "-1")');

    const ifDue = await longrun('compact', agentId, '--if-due');
    expect(ifDue).toMatchObject({ code: 0 });
    expect(ifDue.stdout).toMatch(/^nothing compacted: below the trigger/);

    const stale = await longrun('send', agentId, 'late', '--expect-turn', '1');
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain(`expectedTurn: this message would open turn ${turns + 1}, not 1`);
    expect(await longrun('send', agentId, 'on time', '--expect-turn', String(turns + 1))).toMatchObject({ code: 0 });
    expect((await longrun('send', agentId, 'x', '--expect-turn', '2', '--no-wait')).code).toBe(2);
  });

  it('send <agent> - reads the message from stdin, over what one argument holds; an empty one is refused', async () => {
    const agentId = newAgentId('cli-stdin');
    expect((await longrun('start', agentId)).code).toBe(0);
    // `send <agent> -`: the text from stdin, over what one argument holds (128 KiB), its last line break dropped.
    const long = `${'y'.repeat(150_000)}\nend`;
    const fromStdin = await longrunWithInput(`${long}\n`, 'send', agentId, '-');
    expect(fromStdin.code, fromStdin.stderr).toBe(0);
    const asked = h.model.requests
      .at(-1)!
      .body.messages.filter((m) => m.role === 'user')
      .map((m) => m.content);
    expect(asked.at(-1)).toBe(long);
    const empty = await longrunWithInput('', 'send', agentId, '-');
    expect(empty).toMatchObject({ code: 2 });
    expect(empty.stderr).toContain('longrun: text: must not be empty');
  });
});
