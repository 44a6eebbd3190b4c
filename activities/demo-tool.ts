/**
 * The offline demo's tool: `trail_report`, the conditions on one stage of the Alta Via 1 (a long-distance trail in the
 * Dolomites), made up and the same every time. The main job offers it when the model is the replayed one
 * (llm/endpoint.ts), whose recording (demo/trail-session.jsonl) has a turn that calls it once per stage: an agent
 * working through a dozen tool steps, offline, to try `longrun watch` and `compact` on.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { defineTool, ToolInputError } from './tools.ts';
import type { ToolDefinition } from './tools.ts';

interface Stage {
  from: string;
  to: string;
  km: number;
  up: number;
  down: number;
  /** Undefined: nothing to watch for. */
  care?: string;
}

/** The twelve stages, north to south. */
export const TRAIL_STAGES: readonly Stage[] = [
  { from: 'Lago di Braies', to: 'Rifugio Biella', km: 6.5, up: 880, down: 60 },
  { from: 'Rifugio Biella', to: 'Rifugio Fanes', km: 11, up: 420, down: 780 },
  { from: 'Rifugio Fanes', to: 'Rifugio Lagazuoi', km: 12, up: 1040, down: 420 },
  {
    from: 'Rifugio Lagazuoi',
    to: 'Rifugio Averau',
    km: 9,
    up: 610,
    down: 980,
    care: 'old snow on the north side of Forcella Travenanzes until mid-July: microspikes',
  },
  { from: 'Rifugio Averau', to: 'Rifugio Città di Fiume', km: 10, up: 520, down: 870 },
  { from: 'Rifugio Città di Fiume', to: 'Rifugio Coldai', km: 8, up: 760, down: 330 },
  {
    from: 'Rifugio Coldai',
    to: 'Rifugio Vazzoler',
    km: 9.5,
    up: 280,
    down: 720,
    care: 'the cable section below the Civetta walls is closed for repairs: the detour adds an hour',
  },
  { from: 'Rifugio Vazzoler', to: 'Rifugio Carestiato', km: 10, up: 690, down: 540 },
  { from: 'Rifugio Carestiato', to: 'Rifugio Pramperet', km: 11, up: 720, down: 690 },
  {
    from: 'Rifugio Pramperet',
    to: 'Rifugio Pian de Fontana',
    km: 7,
    up: 640,
    down: 770,
    care: 'rockfall warning in the gully under Forcella de Zita: cross it before 10:00',
  },
  { from: 'Rifugio Pian de Fontana', to: 'Rifugio 7° Alpini', km: 9, up: 830, down: 880 },
  { from: 'Rifugio 7° Alpini', to: 'Belluno', km: 8.5, up: 90, down: 1180 },
];

/** The report of stage `stage` (1-based): its figures, its hazards and two days of hourly weather. */
export function trailReport(stage: number): string {
  const s = TRAIL_STAGES[stage - 1]!;
  const hours = Array.from({ length: 24 }, (_, h) => {
    const day = h < 12 ? 'today' : 'tomorrow';
    const hour = 7 + (h % 12);
    const cloud = ['clear', 'fair', 'cloudy', 'showers'][(stage + h) % 4];
    return `${day} ${String(hour).padStart(2, '0')}:00 ${cloud}, ${6 + ((stage * 3 + h) % 9)} °C, wind ${5 + ((stage + h * 7) % 20)} km/h`;
  });
  return [
    `Stage ${stage} of ${TRAIL_STAGES.length}: ${s.from} → ${s.to}`,
    `${s.km} km, +${s.up} m / -${s.down} m, about ${Math.round((s.km / 4 + s.up / 400) * 2) / 2} h`,
    `Trail: ${s.care ?? 'open, well marked, no reported hazards'}`,
    `Hut: ${s.to} open, half board, book 2 days ahead`,
    ...hours,
  ].join('\n');
}

/** `trail_report`, answering after `delayMs` (the main job: 1.5 s, so a live `watch` sees each step go by). */
export function trailReportTool(options: { delayMs?: number } = {}): ToolDefinition {
  return defineTool({
    name: 'trail_report',
    description: 'Current conditions, hut and hourly weather for one stage (1-12) of the Alta Via 1',
    parameters: {
      type: 'object',
      properties: { stage: { type: 'integer', minimum: 1, maximum: TRAIL_STAGES.length } },
      required: ['stage'],
    },
    run: async ({ stage }) => {
      if (typeof stage !== 'number' || !Number.isInteger(stage) || stage < 1 || stage > TRAIL_STAGES.length) {
        throw new ToolInputError(`stage must be an integer from 1 to ${TRAIL_STAGES.length}`);
      }
      if (options.delayMs) await sleep(options.delayMs);
      return trailReport(stage);
    },
  });
}
