import { describe, expect, it } from 'vitest';
import { continueAsNewReason, DEFAULT_HISTORY_BUDGET } from '../../workflows/continue-as-new.ts';

const quiet = { suggested: false, historyLength: 100, historySize: 10_000, updates: 10, runAgeMs: 60_000 };

describe('continue-as-new decision', () => {
  it('goes on while under every budget', () => {
    expect(continueAsNewReason(quiet)).toBeUndefined();
  });

  it('follows the server suggestion', () => {
    expect(continueAsNewReason({ ...quiet, suggested: true })).toBe('suggested by the server');
  });

  it('hands over when a release asks (renew, or a new current deployment version), however young the run', () => {
    expect(continueAsNewReason({ ...quiet, renew: 'renewed for a release' })).toBe('renewed for a release');
    expect(continueAsNewReason({ ...quiet, renew: 'renewed for a release', runAgeMs: 100 })).toBe(
      'renewed for a release',
    );
    expect(continueAsNewReason({ ...quiet, suggested: true, runAgeMs: 100 })).toBeUndefined();
  });

  it('stops at its own budgets, well under the server limits', () => {
    expect(continueAsNewReason({ ...quiet, historyLength: 8_000 })).toBe('history has 8000 events (budget 8000)');
    expect(continueAsNewReason({ ...quiet, historySize: 8 * 1024 * 1024 })).toBe(
      'history has 8388608 bytes (budget 8388608)',
    );
    expect(continueAsNewReason({ ...quiet, updates: 1_500 })).toBe('1500 updates in this run (budget 1500)');
    expect(DEFAULT_HISTORY_BUDGET.maxUpdates).toBeLessThan(2_000);
    expect(DEFAULT_HISTORY_BUDGET.maxBytes).toBeLessThan(50 * 1024 * 1024);
    expect(DEFAULT_HISTORY_BUDGET.maxEvents).toBeLessThan(51_200);
  });

  it('lets a run live 2 s before it hands over, so that the server never delays the next run', () => {
    expect(continueAsNewReason({ ...quiet, suggested: true, runAgeMs: 1_999 })).toBeUndefined();
    expect(continueAsNewReason({ ...quiet, suggested: true, runAgeMs: 2_000 })).toBe('suggested by the server');
  });

  it('takes a custom budget', () => {
    expect(continueAsNewReason(quiet, { maxEvents: 1_000, maxBytes: 1_000_000, maxUpdates: 5, minRunMs: 0 })).toBe(
      '10 updates in this run (budget 5)',
    );
  });
});
