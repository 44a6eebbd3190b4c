/**
 * The policy's strategies by name, cheapest first in the default order: those that replace a message in place
 * (`replacing.ts`) and those that drop whole steps into the summary (`removing.ts`). Each records only what it
 * actually changed.
 */
import type { StrategyName } from '../policy.ts';
import type { Planning, StepResult } from './board.ts';
import {
  compactTurns,
  compressToolRuns,
  halve,
  summarize,
  summarizeCurrentTurn,
  summarizeRounds,
  trimTurns,
  truncateRounds,
} from './removing.ts';
import { maskToolResults, offloadLarge, supersedeToolResults, truncateToolResults } from './replacing.ts';

/** The strategies over one plan's board. */
export function strategiesOf(p: Planning): Record<StrategyName, () => StepResult> {
  return {
    'supersede-tool-results': () => supersedeToolResults(p),
    'truncate-tool-results': () => truncateToolResults(p),
    'mask-tool-results': () => maskToolResults(p),
    'compress-tool-runs': () => compressToolRuns(p),
    'offload-large': () => offloadLarge(p),
    summarize: () => summarize(p),
    'summarize-rounds': () => summarizeRounds(p),
    'summarize-current-turn': () => summarizeCurrentTurn(p),
    'compact-turns': () => compactTurns(p),
    'trim-turns': () => trimTurns(p),
    'truncate-rounds': () => ({ ids: truncateRounds(p) }),
    halve: () => ({ ids: halve(p) }),
  };
}
