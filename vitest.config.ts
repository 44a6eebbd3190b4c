import { defineConfig } from 'vitest/config';

// Two projects: `unit` is pure code (no servers); `e2e` runs against the real embedded stack
// (Temporal dev server + MinIO) and a loopback OpenAI-compatible server, started once by the global setup.
export default defineConfig({
  test: {
    reporters: ['default', './test/support/summary-reporter.ts'],
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
