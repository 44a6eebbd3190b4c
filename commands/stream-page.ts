/**
 * The page the stream server serves at /agents/<agentId> (commands/stream-server.ts): one HTML file with its script
 * inline, no build step and no dependency. It opens the agent's stream with an EventSource (which resumes with
 * `Last-Event-ID` after a disconnect) and shows, as they come: the model's text as it is written (an attempt that was
 * retried is struck out and its retry shown after it), tool calls with their arguments, tool results, compaction
 * steps, steers, interrupts, approvals and turn ends. Everything is written with textContent: nothing the agent
 * writes is read as HTML.
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
`;

/** The page's script: plain JS, run in the browser. */
const SCRIPT = `
const agentId = document.body.dataset.agent;
const log = document.getElementById('log');
const state = document.getElementById('state');
const from = new URLSearchParams(location.search).get('from') ?? '0';
const calls = new Map(); // call -> { attempt, element, args: Map(index -> element) }
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
    case 'tool-call-delta': {
      const call = callOf(item);
      if (item.attempt < call.attempt) return;
      let el = call.args.get(item.index);
      if (!el) {
        el = add('tool', '→ ' + (item.name ?? 'tool') + ' ');
        el.dataset.call = item.call;
        call.args.set(item.index, el);
        call.elements.push(el);
      }
      el.textContent += item.arguments;
      break;
    }
    case 'tool-call':
      add('tool', '→ ' + item.name + ' ' + item.arguments);
      break;
    case 'tool-result':
      add('result', '← ' + item.name + ': ' + item.preview + (item.chars > item.preview.length ? ' …' : ''));
      break;
    case 'model-end':
      break;
    case 'compaction':
      add('event', 'compaction ' + item.seq + ': ' + item.phase + ' ' + item.state);
      break;
    case 'steer':
      add('event', 'steer (turn ' + item.turn + ', step ' + item.step + '): ' + item.text);
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
