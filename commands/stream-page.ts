/**
 * The page the stream server serves at /agents/<agentId> (commands/stream-server.ts): one HTML file with its script
 * inline, no build step and no dependency. It opens the agent's stream with an EventSource (which resumes with
 * `Last-Event-ID` after a disconnect) and shows, as they come: the model's text as it is written (an attempt that was
 * retried is struck out and its retry shown after it), the user's message that opens a turn, each tool call once
 * (the line its argument pieces build, completed by the call as it runs), tool results, each compaction once (one
 * line: its steps, then what became of it: a draft, applied with the tokens before and after, discarded, not applied;
 * a revert a line of its own), steers, interrupts, approvals and turn ends. Everything is written with textContent:
 * nothing the agent writes is read as HTML.
 */

const STYLE = `
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; background: #fafafa; color: #222; }
header { padding: .6em 1em; background: #24292f; color: #fff; display: flex; gap: 1em; align-items: baseline; }
header h1 { font-size: 1.05em; margin: 0; }
#state { font-size: .85em; opacity: .8; }
main { padding: 1em; max-width: 60em; }
.item { margin: .35em 0; white-space: pre-wrap; word-break: break-word; }
.model { background: #fff; border-left: 3px solid #0969da; padding: .3em .6em; }
.superseded { text-decoration: line-through; opacity: .5; }
.tool { font-family: ui-monospace, monospace; font-size: .9em; background: #f0f3f6; padding: .2em .5em; }
.result { font-family: ui-monospace, monospace; font-size: .85em; color: #555; padding: .2em .5em; }
.event { font-size: .85em; color: #666; }
.turn-end { border-top: 1px solid #ccc; padding-top: .3em; font-weight: 600; }
.user { background: #fff8c5; border-left: 3px solid #bf8700; padding: .3em .6em; }
.steer { color: #8250df; }
`;

/** The page's script: plain JS, run in the browser. */
const SCRIPT = `
const agentId = document.body.dataset.agent;
const log = document.getElementById('log');
const state = document.getElementById('state');
const from = new URLSearchParams(location.search).get('from') ?? '0';
const calls = new Map(); // model call -> { attempt, elements, text, args: Map(index -> element) }
const tools = new Map(); // tool call id -> its line (the deltas build it, the tool-call completes it)
const compactions = new Map(); // seq -> its latest block { seq, draft, entries, element }
const drafts = new Map(); // draft id -> its block (a discard may come after the next compaction began)
let last = -1;

function add(cls, text) {
  const el = document.createElement('div');
  el.className = 'item ' + cls;
  el.textContent = text;
  log.appendChild(el);
  return el;
}

function callOf(item) {
  let call = calls.get(item.call);
  if (!call || item.attempt > call.attempt) {
    if (call) for (const el of call.elements) el.classList.add('superseded');
    call = { attempt: item.attempt, elements: [], text: null, args: new Map() };
    calls.set(item.call, call);
  }
  return call;
}

const tokens = (n) => Number(n).toLocaleString('en-US');
const sizes = (item) => tokens(item.tokensBefore) + ' → ' + tokens(item.tokensAfter) + ' tokens';

/** A compaction's block: one line, its steps and what became of it in order, rewritten as they come. */
function render(block) {
  const shown = block.entries.map((e) => {
    switch (e.outcome) {
      case undefined: return e.phase + (e.state === 'began' ? '…' : e.state === 'ended' ? ' ✓' : ' failed');
      case 'drafted': return e.draft + ' awaits review (' + sizes(e) + ')';
      case 'applied': return 'applied ' + sizes(e);
      case 'no-gain': return 'not applied: ' + sizes(e) + ' would not shrink the context';
      case 'discarded': return (e.draft ?? 'the draft') + ' discarded';
      default: return e.outcome;
    }
  });
  block.element.textContent =
    'compaction ' + block.seq + (block.draft ? ' (' + block.draft + ')' : '') + ': ' + shown.join(' · ');
}

/** The block of compaction \`seq\` an item is of; planning opens a new one (a seq is tried again after a discard). */
function blockOf(seq, opens) {
  let block = compactions.get(seq);
  if (!block || opens) {
    block = { seq, draft: undefined, entries: [], element: add('event compaction', '') };
    block.element.dataset.seq = String(seq);
    compactions.set(seq, block);
  }
  return block;
}

function compactionStep(item) {
  const block = blockOf(item.seq, item.phase === 'planning' && item.state === 'began');
  const step = block.entries.find((e) => e.phase === item.phase);
  if (step) step.state = item.state;
  else block.entries.push({ phase: item.phase, state: item.state });
  render(block);
}

function compactionOutcome(item) {
  if (item.outcome === 'reverted') {
    add('event compaction revert', 'revert (event ' + item.seq + '): the context before event ' + item.toEvent +
      ' is back, ' + sizes(item));
    return;
  }
  const block = (item.draft && drafts.get(item.draft)) || blockOf(item.seq, false);
  if (item.outcome === 'drafted') {
    block.draft = item.draft;
    drafts.set(item.draft, block);
  }
  block.entries.push(item);
  render(block);
}

function toolCallDelta(item) {
  const call = callOf(item);
  if (item.attempt < call.attempt) return;
  let el = call.args.get(item.index);
  if (!el) {
    el = add('tool', '→ ' + (item.name ?? 'tool') + ' ');
    el.dataset.call = item.call;
    call.args.set(item.index, el);
    call.elements.push(el);
  }
  if (item.callId) tools.set(item.callId, el);
  el.textContent += item.arguments;
}

function show(item) {
  if (item.offset <= last) return; // resumed: already shown
  last = item.offset;
  document.body.dataset.offset = String(item.offset);
  switch (item.kind) {
    case 'model-start': {
      callOf(item);
      break;
    }
    case 'superseded': {
      callOf(item);
      add('event', 'the model call ' + item.call + ' is retried (attempt ' + item.attempt + '): what it wrote before is struck out');
      break;
    }
    case 'text': {
      const call = callOf(item);
      if (item.attempt < call.attempt) return;
      if (!call.text) {
        call.text = add('model', '');
        call.text.dataset.call = item.call;
        call.elements.push(call.text);
      }
      call.text.textContent += item.text;
      break;
    }
    case 'tool-call-delta':
      toolCallDelta(item);
      break;
    case 'tool-call': {
      // The call as it runs: the line its deltas built, completed; a line of its own when none streamed.
      const text = '→ ' + item.name + ' ' + item.arguments;
      const el = tools.get(item.callId);
      if (el && !el.classList.contains('superseded')) el.textContent = text;
      else tools.set(item.callId, add('tool', text));
      break;
    }
    case 'tool-result':
      add('result', '← ' + item.name + ': ' + item.preview + (item.chars > item.preview.length ? ' …' : ''));
      break;
    case 'model-end':
      break;
    case 'user-message':
      add('user', (item.turn !== undefined ? 'turn ' + item.turn + ', ' : '') + 'user: ' + item.text +
        (item.chars > item.text.length ? ' …' : ''));
      break;
    case 'compaction':
      compactionStep(item);
      break;
    case 'compaction-outcome':
      compactionOutcome(item);
      break;
    case 'steer':
      add('event steer', 'steer (turn ' + item.turn + ', step ' + item.step + '): ' + item.text);
      break;
    case 'interrupted':
      add('event', 'interrupted' + (item.turn !== undefined ? ' (turn ' + item.turn + ')' : '') + ': ' + item.reason);
      break;
    case 'approval-asked':
      add('event', 'approval asked for ' + item.name + ' ' + item.arguments);
      break;
    case 'approval-answered':
      add('event', (item.approved ? 'approved ' : 'denied ') + item.callId + (item.reason ? ': ' + item.reason : ''));
      break;
    case 'turn-end':
      add('turn-end', 'turn ' + item.turn + ' ended' + (item.reply ? ': ' + item.reply : ''));
      break;
    default:
      add('event', item.kind);
  }
}

const source = new EventSource('/agents/' + encodeURIComponent(agentId) + '/stream?from=' + encodeURIComponent(from));
source.onopen = () => { state.textContent = 'live'; document.body.dataset.state = 'live'; };
source.onerror = () => { state.textContent = 'reconnecting…'; document.body.dataset.state = 'reconnecting'; };
source.onmessage = (event) => show(JSON.parse(event.data));
`;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The page for `agentId` (an id {@link AGENT_ID_PATTERN} allows; escaped anyway). */
export function streamPage(agentId: string): string {
  const id = escapeHtml(agentId);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${id} · longrun</title>
<style>${STYLE}</style>
</head>
<body data-agent="${id}">
<header><h1>agent ${id}</h1><span id="state">connecting…</span></header>
<main id="log"></main>
<script>${SCRIPT}</script>
</body>
</html>
`;
}
