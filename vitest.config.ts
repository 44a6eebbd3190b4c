import { defineConfig } from 'vitest/config';

// Two projects: `unit` is pure code (no servers); `e2e` runs against the real embedded stack
// (Temporal dev server + MinIO) and a loopback OpenAI-compatible server, started once by the global setup.
export default defineConfig({
  test: {
    reporters: ['default', './test/support/summary-reporter.ts'],
    // Two test files at a time, whatever the machine (vitest's default in a run is one less than the cores: one file
    // at a time on the 2-core CI machine). The e2e files mostly wait on servers, models and timers, so two at a time
    // on 2 cores took the suite from 1,479 s to 866 s, every test passing (docs/testing.md). They do not share state:
    // each file's agents and task queues are its own, and a file that kills a server runs servers of its own.
    maxWorkers: 2,
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: ['test/support/global-stack.ts'],
          // A break of the coverage invariant fails the turn or compaction, loudly (production records it).
          env: { LONGRUN_STRICT_INVARIANTS: 'true' },
          testTimeout: 120_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
