// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

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

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', '.data/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['*.js', 'bin/*.js'] },
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
    // Workflow code is replayed: no I/O, no Node built-ins, no clients of the outside world.
    // Activities are imported as types only and called through proxyActivities.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
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
              // storage/keys.ts is the key layout only: pure string functions the workflow uses too.
              group: [
                '../storage/**',
                '!../storage/keys.ts',
                '../llm/**',
                '../stack/**',
                '../worker/**',
                '../client/**',
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
    files: ['**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
);
