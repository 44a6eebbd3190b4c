/** Where the scale benchmark keeps its results and plot, and how the results file is read. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../config/settings.ts';
import type { ScaleResult } from './results.ts';

export const RESULTS_FILE = join(PROJECT_ROOT, 'bench', 'scale-results.json');
export const PLOT_FILE = join(PROJECT_ROOT, 'bench', 'scale-plot.png');

/** The results file: the latest run's fields at the top level, and every run by label under `runs`. */
export type ResultsFile = Partial<ScaleResult> & { runs: Record<string, ScaleResult> };

export function readResults(path: string): ResultsFile {
  if (!existsSync(path)) return { runs: {} };
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as ResultsFile;
  return { ...parsed, runs: parsed.runs ?? {} };
}

/** The file with `result` as the latest run and under its label (a run of the same label is replaced). */
export function mergeResults(file: ResultsFile, result: ScaleResult): ResultsFile {
  return { ...result, runs: { ...file.runs, [result.label]: result } };
}
