// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import noImportCycle from './lint/no-import-cycle.js';

const nodeBuiltins = [
  'fs',
  'path',
  'os',
  'child_process',
  'net',
  'http',
  'https',
  'crypto',
  'stream',
  'worker_threads',
  'process',
  'dns',
  'tls',
  'zlib',
  'readline',
  'url',
  'util',
  'events',
  'timers',
];

/** A folder's import rule: the project folders it may not import (type imports included). */
function layer(files, forbidden, message) {
  return [
    {
      files: [files],
      rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: [{ group: forbidden, message }] }] },
    },
  ];
}

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', '.data/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['*.js', 'bin/*.js', 'lint/*.js'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'separate-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
    },
  },
  {
    // No import cycle anywhere in the project's code (a cycle would also break the direction below).
    files: ['**/*.ts'],
    plugins: { longrun: { rules: { 'no-import-cycle': noImportCycle } } },
    rules: { 'longrun/no-import-cycle': 'error' },
  },
  // The direction of imports: contract/ and engine/ at the bottom; workflows and activities beside each other (the
  // workflow sees the activities as types only); client/ and worker/ apart; commands/ on top. Each rule lists what
  // a folder may not import; a cycle would need one of them.
  ...layer('engine/**/*.ts', ['../*/**'], 'The engine is pure: it imports nothing of the project outside engine/.'),
  ...layer(
    'contract/**/*.ts',
    [
      '../activities/**',
      '../workflows/**',
      '../client/**',
      '../worker/**',
      '../commands/**',
      '../storage/**',
      '../llm/**',
      '../stack/**',
      '../config/**',
      '../codec/**',
    ],
    'The contract is at the bottom: it imports only the engine (and @temporalio/common, @temporalio/workflow).',
  ),
  ...layer(
    'activities/**/*.ts',
    ['../workflows/**', '../client/**', '../worker/**', '../commands/**'],
    'Activities import the contract, never workflow code, the client or the worker.',
  ),
  ...layer(
    'client/**/*.ts',
    ['../worker/**', '../commands/**', '../activities/**', '../workflows/**', '../stack/**'],
    'The client library imports the contract and config/, never the worker, workflow or activity code, or the commands.',
  ),
  ...layer(
    'worker/**/*.ts',
    ['../client/**', '../commands/**'],
    'The worker does not import the client library or the commands (commands/ composes them).',
  ),
  ...layer(
    '{llm,storage,config,stack,codec}/**/*.ts',
    ['../activities/**', '../workflows/**', '../client/**', '../worker/**', '../commands/**'],
    'Infrastructure modules import only the contract, the engine and each other.',
  ),
  {
    // Workflow code is replayed: no I/O, no Node built-ins, no clients of the outside world. Activities are imported
    // as types only and called through proxyActivities; of the engine, only what the workflow runs (the O(1) gate,
    // the ledger's update, the message helpers) is imported as values.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': 'off',
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            ...nodeBuiltins.flatMap((name) => [
              { name, message: 'Workflow code must not use Node built-ins (not replay-safe).' },
              { name: `node:${name}`, message: 'Workflow code must not use Node built-ins (not replay-safe).' },
            ]),
            { name: 'openai', message: 'Call the model from an activity, never from workflow code.' },
            { name: '@aws-sdk/client-s3', message: 'Use storage from an activity, never from workflow code.' },
            {
              name: '@temporalio/client',
              message: 'Workflow code talks to Temporal through @temporalio/workflow only.',
            },
            {
              name: '@temporalio/worker',
              message: 'Workflow code talks to Temporal through @temporalio/workflow only.',
            },
            { name: '@temporalio/activity', message: 'Activities run in the worker, not in workflow code.' },
          ],
          patterns: [
            { group: ['../activities/**'], allowTypeImports: true, message: 'Import activities as types only.' },
            {
              group: [
                '../engine/**',
                '!../engine/trigger.ts',
                '!../engine/ledger.ts',
                '!../engine/messages.ts',
                '!../engine/coverage.ts',
              ],
              allowTypeImports: true,
              message:
                'Workflow code runs only the engine modules it needs (trigger, ledger, messages, coverage); types are free.',
            },
            {
              group: [
                '../storage/**',
                '../llm/**',
                '../stack/**',
                '../codec/**',
                '../worker/**',
                '../client/**',
                '../commands/**',
                '../config/**',
              ],
              message: 'Workflow code must not import I/O modules.',
            },
          ],
        },
      ],
    },
  },
  {
    // The examples import the packed package (`longrun/worker`, …), which exists only once installed:
    // test/e2e/package.test.ts type-checks them against it; here they are linted without type information.
    files: ['examples/**/*.ts'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    files: ['**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
);
