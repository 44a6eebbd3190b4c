/**
 * The presets side by side (issue 42): per session and window, each preset's cost, the cheapest seed preset (every
 * preset but `default` that replayed every step), the default's cost against it and against its floor, and the
 * default's plans that found nothing. Rows without a default, or without a seed preset that ran, are left out.
 */
import type { RunResult } from './measure.ts';

/** One session at one window: what each preset cost, and the default against the cheapest seed. */
export interface PresetComparison {
  session: string;
  window: number;
  costs: Record<string, number>;
  cheapest: { preset: string; cost: number };
  defaultCost: number;
  /** The default's cost ÷ the cheapest seed preset's (issue 42's target: at most 1). */
  ratio: number;
  /** The default's cost ÷ its floor (commands/replay-cost.ts `costFloorOf`); null without a floor. */
  toFloor: number | null;
  plans?: { made: number; empty: number };
}

/** The comparison of every session × window the results hold a default and a seed preset for. */
export function comparePresets(results: readonly RunResult[]): PresetComparison[] {
  const rows = new Map<string, RunResult[]>();
  for (const r of results) {
    if (r.error !== undefined || r.cost === null || r.replayedSteps < r.recordedSteps) continue;
    const key = `${r.session}\u0000${r.window}`;
    rows.set(key, [...(rows.get(key) ?? []), r]);
  }
  return [...rows.values()].flatMap((runs) => {
    const ours = runs.find((r) => r.preset === 'default');
    const seeds = runs.filter((r) => r.preset !== 'default');
    if (!ours || seeds.length === 0) return [];
    const cheapest = seeds.reduce((best, r) => (r.cost! < best.cost! ? r : best));
    return [
      {
        session: ours.session,
        window: ours.window,
        costs: Object.fromEntries(runs.map((r) => [r.preset, r.cost!])),
        cheapest: { preset: cheapest.preset, cost: cheapest.cost! },
        defaultCost: ours.cost!,
        ratio: ours.cost! / cheapest.cost!,
        toFloor: ours.costFloor ? ours.cost! / ours.costFloor : null,
        ...(ours.plans ? { plans: { made: ours.plans.made, empty: ours.plans.empty } } : {}),
      },
    ];
  });
}

/** The comparison as a table, and the worst ratio under it; empty when there is nothing to compare. */
export function renderPresetComparison(results: readonly RunResult[]): string {
  const rows = comparePresets(results);
  if (rows.length === 0) return '';
  const header =
    'session           window  default    cheapest seed preset       default ÷ cheapest  ÷ floor  plans (empty)';
  const lines = rows.map(
    (r) =>
      `${r.session.padEnd(16)} ${`${Math.round(r.window / 1000)}k`.padStart(7)}  ` +
      `$${r.defaultCost.toFixed(4)}    ${`${r.cheapest.preset} $${r.cheapest.cost.toFixed(4)}`.padEnd(25)}  ` +
      `${r.ratio.toFixed(3).padStart(18)}  ${(r.toFloor === null ? '–' : r.toFloor.toFixed(2)).padStart(7)}  ` +
      (r.plans ? `${r.plans.made} (${r.plans.empty})` : '–'),
  );
  const worst = rows.reduce((a, b) => (b.ratio > a.ratio ? b : a));
  return (
    `the default against the cheapest seed preset (issue 42: at most 1 on every row):\n${header}\n${lines.join('\n')}\n` +
    `worst: ${worst.ratio.toFixed(3)} (${worst.session} at ${Math.round(worst.window / 1000)}k, ${worst.cheapest.preset})`
  );
}
