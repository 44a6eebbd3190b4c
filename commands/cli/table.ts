/**
 * The `longrun` commands: each one's arguments, flags, help and handler. `longrun help`, `longrun <command> --help`,
 * the table in docs/cli.md (test/unit/cli-flags.test.ts checks it) and the parsing of a command line (parse.ts) are
 * all made from this table; the handlers are in the files beside it, by group.
 */
import { assertAgentId } from '../../client/agents.ts';
import {
  DEFAULT_APPROVAL_SECONDS,
  DEFAULT_TURN_STEPS,
  MAX_APPROVAL_SECONDS,
  MAX_INSTRUCTIONS_CHARS,
  MAX_MESSAGE_CHARS,
  MAX_REASON_CHARS,
  TURN_BUDGET_MAX,
} from '../../contract/inputs.ts';
import { MAX_REVIEW_SECONDS, STRATEGIES } from '../../engine/policy.ts';
import { PRESET_NAMES, PRESETS } from '../../engine/presets.ts';
import { SEARCH_LIMITS } from '../../storage/search-index.ts';
import * as agents from './agent-commands.ts';
import * as compaction from './compaction-commands.ts';
import * as control from './control-commands.ts';
import * as local from './local-commands.ts';
import * as pins from './pin-commands.ts';
import { rollout } from './rollout-command.ts';
import { DEFAULT_PIN_RATIO } from '../../contract/pins.ts';
import type { Arg, Command } from './parse.ts';

const AGENT: Arg = { name: 'agent', check: assertAgentId };
const DRAFT: Arg = { name: 'draft', hint: 'the id compact --review printed' };
const CALL: Arg = { name: 'callId', hint: 'the id longrun tools printed' };

/** 1000000 as 1,000,000. */
const n = (value: number) => value.toLocaleString('en-US');

export const COMMANDS = {
  up: {
    args: [],
    summary:
      'the main job, as `npm start`: the embedded stack (unless TEMPORAL_ADDRESS and AWS_ENDPOINT_URL_S3 name ' +
      'running servers), the worker and a short demo conversation, until Ctrl-C',
    flags: {
      once: 'exit 0 after the demo, leaving no process behind',
      'no-demo': 'just the worker (as worker/main.ts, which the Docker image runs)',
      cluster:
        'cluster mode instead: PostgreSQL, the Temporal server, its UI, MinIO and two worker processes, the ' +
        'production shape of docker-compose.yml (docs/operations.md)',
    },
    run: local.up,
  },
  start: {
    args: [AGENT],
    summary:
      'start an agent; idempotent while it runs with the settings given (others: exit 2 naming them, nothing ' +
      'applied; longrun configure changes them), and an id whose agent has closed is refused (a new id, or --reopen)',
    more:
      'A turn (the work on one message) stops without a final answer when it reaches its budget (--max-steps, ' +
      '--max-turn-tokens, --max-turn-seconds): send another message to continue.',
    flags: {
      model: 'the model (default LONGRUN_MODEL)',
      system: 'the system prompt',
      'max-steps':
        `the turn budget: model calls per message (default ${DEFAULT_TURN_STEPS}, ` +
        `at most ${n(TURN_BUDGET_MAX.steps)})`,
      'max-turn-tokens': `the turn budget: tokens spent per message (at most ${n(TURN_BUDGET_MAX.tokens)})`,
      'max-turn-seconds': `the turn budget: seconds per message (at most ${n(TURN_BUDGET_MAX.seconds)})`,
      window: "the model's window, for a model the registry does not know",
      price:
        'the price its calls cost, USD per million tokens of input, cached input (empty: 0.1 × input) and output, ' +
        "instead of the model's list price (engine/models.ts); the state, events and AgentCost report it",
      preset: `the compaction policy: ${PRESET_NAMES.join(', ')} (docs/compaction.md)`,
      background:
        'the share of the window from which compaction runs in the background while the agent works (' +
        `${PRESETS.default!.backgroundRatio} in the default preset), or off: compaction only blocks, before the ` +
        'call that needs it',
      'await-review':
        'automatic compactions wait as drafts for approve or discard up to SECONDS ' +
        `(at most ${n(MAX_REVIEW_SECONDS)}), ` +
        'then are applied (or discarded)',
      'on-review-timeout': 'what a draft that waited --await-review SECONDS becomes (default apply)',
      'approve-tools':
        'every call of these tools waits for a person: longrun approve-tool or deny-tool (longrun tools lists ' +
        'the waiting calls)',
      'approval-timeout': `how long such a call waits (default ${n(DEFAULT_APPROVAL_SECONDS)}, at most ${n(MAX_APPROVAL_SECONDS)})`,
      'on-approval-timeout': 'what a call nobody answered in time becomes (default deny)',
      'pin-ratio': `the pin budget: the share of the window pins may hold (default ${DEFAULT_PIN_RATIO}, at most 0.5)`,
      'budget-note':
        'a short note at the end of each request telling the model its context and turn budget (on in the default ' +
        'preset, off in the others)',
      reopen:
        'continue a closed agent under the same id: its messages, ids, summary, ledger and settings (no other ' +
        'flag goes with it)',
    },
    run: agents.start,
  },
  configure: {
    args: [AGENT],
    summary:
      "change a running agent's model, window or system prompt (an Update, after its queued input) and print " +
      'what changed; a smaller window compacts first when the context would not fit it',
    more:
      'A new --model takes its window from the registry unless --window is given, and must count tokens as the ' +
      "agent's messages were counted (same encoding and margin). A new --system is sent before the next message.",
    flags: {
      model: 'the model to use from the next model call',
      window: `the model's window (${n(1_024)} to ${n(10_000_000)} tokens)`,
      system: 'the system prompt, sent before the next message',
      json: 'the result as JSON',
    },
    run: agents.configure,
  },
  send: {
    args: [AGENT, { name: 'text', variadic: true }],
    summary: `send a message (an Update, at most ${n(MAX_MESSAGE_CHARS)} characters) and print the reply`,
    more:
      'The text `-` reads the message from stdin (`longrun send trip - < notes.md`), its last line break dropped: ' +
      'one argument holds at most 128 KiB on Linux.',
    flags: {
      'no-wait': 'queue the message (a Signal) and return at once',
      'expect-turn': 'only if it opens turn N (nobody else sent meanwhile); otherwise it is refused',
      json: 'the result as JSON',
    },
    run: agents.send,
  },
  chat: {
    args: [AGENT],
    summary:
      'interactive: each line is a message; Ctrl-C during a turn interrupts it (a second Ctrl-C, or one between ' +
      'turns, leaves); /state shows the state, /quit or Ctrl-D leaves; reads piped lines too',
    flags: {},
    run: agents.chat,
  },
  steer: {
    args: [AGENT, { name: 'text', variadic: true }],
    summary:
      'add a user message to the turn in progress at its next step boundary (after the step’s tool results, ' +
      `before the next model call; at most ${n(MAX_MESSAGE_CHARS)} characters) and print where it landed: turn ` +
      'and step; on an idle agent it opens a turn',
    flags: {
      'no-wait': 'send it (a Signal) and return at once',
      json: 'the result as JSON',
    },
    run: control.steer,
  },
  interrupt: {
    args: [AGENT, { name: 'text', variadic: true, optional: true }],
    summary:
      'stop the turn in progress now (the model call or tool in flight is cancelled, unanswered tool calls are ' +
      'answered as interrupted) and print at which step it ended; with text, the next turn opens with it',
    more:
      'The send that opened the turn gets a reply that says it was interrupted and at which step; the partial turn ' +
      'stays in the context. On an idle agent nothing is interrupted (exit 0, saying so).',
    flags: {
      'no-wait': 'send it (a Signal) and return at once',
      json: 'the result as JSON',
    },
    run: control.interrupt,
  },
  tools: {
    args: [AGENT],
    summary:
      'the tool calls waiting for approval: id, tool, arguments, the time left and what happens then (denied or ' +
      'approved), and the commands that answer each',
    flags: { json: 'the calls as JSON' },
    run: control.tools,
  },
  'approve-tool': {
    args: [AGENT, CALL],
    summary: 'let a tool call waiting for approval run; a call that does not wait is refused',
    flags: { json: 'the result as JSON' },
    run: control.approveToolCall,
  },
  'deny-tool': {
    args: [AGENT, CALL, { name: 'reason', variadic: true, optional: true }],
    summary:
      'refuse a tool call waiting for approval: the model sees a result that says it was denied, with the reason ' +
      `(at most ${n(MAX_REASON_CHARS)} characters), and the turn goes on`,
    flags: { json: 'the result as JSON' },
    run: control.denyToolCall,
  },
  state: {
    args: [AGENT],
    summary:
      'status, model, context, turns, whether a worker polls its task queue, an activity failing and retried (a ' +
      'model endpoint that is down, named), the last error, a draft waiting for review (its time left, the ' +
      'commands that answer it) and the stored messages (a step that only calls tools shows its calls)',
    flags: { json: 'the whole state as JSON' },
    run: agents.state,
  },
  context: {
    args: [AGENT],
    summary:
      'the working context: previews (a step that only calls tools: its calls) and storage references, pinned ' +
      'messages marked, then the pins',
    flags: { json: "the context's records as JSON" },
    run: agents.context,
  },
  pin: {
    args: [AGENT, { name: 'message', optional: true, hint: 'a message id longrun context printed' }],
    summary:
      'pin a message of the working context, or a text (--text): every compaction keeps it verbatim (a message in ' +
      'place, a text in the pinned block after the system prompt); over the pin budget (policy pinRatio of the ' +
      `window, ${DEFAULT_PIN_RATIO} by default) it is refused, naming the budget and the sizes`,
    flags: {
      text: `the text to pin instead of a message (at most ${n(MAX_MESSAGE_CHARS)} characters)`,
      json: 'the result as JSON',
    },
    run: pins.pin,
  },
  unpin: {
    args: [AGENT, { name: 'pin', hint: 'a pin id (pin-N) longrun pin or context printed' }],
    summary: 'remove a pin: the message is compactable again, the text leaves the pinned block',
    flags: { json: 'the result as JSON' },
    run: pins.unpin,
  },
  reload: {
    args: [AGENT, { name: 'reference' }],
    summary:
      'print stored content (a message or an offloaded segment), byte for byte; only under the agent’s own prefix',
    more:
      'A reference is a storage key as `context` and `search` show it (`agents/<agent>/<life>/messages/m000002.json`); ' +
      'the model\'s form, `context_reload("agents/…")`, is taken too.',
    flags: {},
    run: agents.reload,
  },
  search: {
    args: [AGENT, { name: 'query', variadic: true }],
    summary:
      'full-text search over everything the agent stored (messages, tool results and their whole originals, ' +
      'summaries), also what left its context, and on a closed agent: the best matches with id, role, turn and ' +
      'step, a snippet and the `longrun reload` command that prints it whole',
    more: `The words of the query are searched as written (BM25 ranking, MiniSearch); at most ${n(SEARCH_LIMITS.query.maxChars)} characters.`,
    flags: {
      limit: `matches to print (default ${SEARCH_LIMITS.limit.default}, ${SEARCH_LIMITS.limit.min} to ${SEARCH_LIMITS.limit.max})`,
      json: 'the matches as JSON',
    },
    run: agents.search,
  },
  compact: {
    args: [AGENT],
    summary: 'force a compaction now and print what it did',
    flags: {
      instructions: `for the summary (at most ${n(MAX_INSTRUCTIONS_CHARS)} characters)`,
      strategy: `only this strategy: ${STRATEGIES.join(', ')}`,
      'if-due': 'only if the automatic trigger fires now',
      'even-if-larger':
        'apply it even if it leaves the context larger (without it, a compaction that would not shrink the context ' +
        'prints "nothing to gain (before → ~after)" and is not made)',
      review:
        'plan and summarize but apply nothing: print the draft (id, plan, summary text, tokens, facts) for approve ' +
        'or discard',
      'no-wait': 'ask for it (a Signal) and return at once',
      json: 'the result as JSON',
    },
    run: compaction.compact,
  },
  approve: {
    args: [AGENT, DRAFT],
    summary:
      'apply the draft (of compact --review, or of an automatic compaction awaiting review); a stale draft is refused',
    flags: {
      'summary-file': `an edited summary (at most ${n(MAX_MESSAGE_CHARS)} characters): the facts it lost are pinned`,
      json: 'the result as JSON',
    },
    run: compaction.approve,
  },
  discard: {
    args: [AGENT, DRAFT],
    summary:
      'drop the draft (an automatic compaction’s: automatic compaction pauses until the context grows, and says ' +
      'until when)',
    flags: { json: 'the result as JSON' },
    run: compaction.discard,
  },
  events: {
    args: [AGENT],
    summary: 'compaction events, oldest first, and totals (each read in full from S3, removed items included)',
    flags: {
      since: 'only the events after SEQ',
      limit: 'at most N events',
      json: 'the events and totals as JSON',
    },
    run: compaction.events,
  },
  revert: {
    args: [AGENT],
    summary:
      'restore the working context as it was before event N (byte-identical; every message stored since follows ' +
      'it, raw) and the task ledger of then: an event of its own',
    flags: {
      'to-event': 'the event to go back before',
      json: 'the result as JSON',
    },
    required: ['to-event'],
    run: compaction.revert,
  },
  watch: {
    args: [AGENT],
    summary:
      'follow the agent live: the model’s output as it is written (its live stream, docs/streaming.md), each turn ' +
      'and compaction as it completes, and the step in progress (model call, compaction planning / summarizing ' +
      'chunk k of n / applying) on one updating line, until Ctrl-C or the agent closes',
    flags: {
      interval: 'between polls (default 500, 100 to 60000)',
      json: 'one object per change (and per stream item)',
    },
    run: agents.watch,
  },
  replay: {
    args: [{ name: 'recording', hint: 'a JSONL file of OpenAI chat messages' }],
    summary:
      'run a recorded session (OpenAI chat messages as JSONL) through a real agent and report what compaction did; ' +
      'starts the embedded stack unless TEMPORAL_ADDRESS is set',
    flags: {
      preset: 'the compaction policy to replay it under',
      policy:
        "a JSON object of policy overrides on top of the preset, as an agent's compaction setting takes them " +
        '(docs/configuration.md)',
      window: 'the window to replay it in',
      price: "the price to cost it at (USD per million tokens: input, cached input, output; default gpt-4o-mini's)",
      json: 'the report as JSON',
    },
    run: local.replay,
  },
  list: {
    args: [],
    summary: 'the agents in this namespace: status (as state shows it), model, turns, context tokens, task queue',
    flags: { json: 'the list as JSON' },
    run: agents.list,
  },
  rollout: {
    args: [],
    summary:
      'after a release, ask every running agent whose run began before now (or --before) to hand over to a new run on the ' +
      'release’s code (the renew Signal), and wait until none is left (at most 10 minutes), saying which wait and why',
    more:
      'An idle agent hands over at once, one in a turn at its next step, one with a tool call waiting for approval ' +
      'once it is answered. Exit 1 when some are still waiting at the end: run it again later (docs/operations.md).',
    flags: {
      'task-queue': 'only the agents on this task queue',
      before:
        'renew the runs that began before TIME (ISO 8601, default now): the time the release’s workers started, so ' +
        'that running it again renews no run twice',
      'no-wait': 'ask and return at once',
      json: 'the result as JSON',
    },
    run: rollout,
  },
  close: {
    args: [AGENT],
    summary: 'close the agent (a Signal)',
    flags: {
      wait: 'until it is done (an Update), then print the final state',
      json: 'the final state as JSON',
    },
    run: agents.close,
  },
  'codec-server': {
    args: [],
    summary:
      'serve POST /encode and /decode with the encryption keys, for the Temporal UI and the temporal CLI ' +
      '(docs/encryption.md), until Ctrl-C',
    flags: {
      port: 'the port (default LONGRUN_CODEC_PORT, else 8081)',
      host: 'the address to listen on (default 127.0.0.1; 0.0.0.0 in a container)',
      origins: 'the browser origins allowed (default LONGRUN_CODEC_ORIGINS, else the embedded UI’s)',
      namespaces: 'the namespaces served (default the Temporal target’s: TEMPORAL_NAMESPACE, a profile, "default")',
    },
    run: local.codecServer,
  },
  'stream-server': {
    args: [],
    summary:
      'serve agents’ live streams as Server-Sent Events (GET /agents/<agent>/stream, Last-Event-ID resumes) and a ' +
      'page that shows a live agent (GET /agents/<agent>) (docs/streaming.md), until Ctrl-C',
    flags: {
      port: 'the port (default 7244; 0: a free one)',
      host: 'the address to listen on (default 127.0.0.1)',
    },
    run: local.streamServer,
  },
} satisfies Record<string, Command>;

export type CommandName = keyof typeof COMMANDS;
