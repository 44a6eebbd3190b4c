// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Code rules only. The import rules (the direction between folders, no cycle, what workflow code imports and what
// its bundle runs) are dependency-cruiser's: .dependency-cruiser.js and lint/workflow-bundle.js (npm run lint:deps).

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
    // Size limits: a room that grows gets a new file named for its role, not a longer one; a closure that holds a
    // whole subsystem becomes a class or a folder of small factories (../shared/STYLE.md). The limits hold by
    // themselves: test/unit/lint.test.ts runs ESLint in `npm test`, so CI fails the change that regrows a file. A file
    // that truly needs more says so itself: an eslint-disable comment for the rule, with its reason in the file's
    // header. Comments count (they are part of what a reader reads); blank lines do not.
    // Not covered: test/ and bench/, whose files are lists of cases and scenarios (a describe() callback spans its
    // whole file), examples/, which is a team's app shown whole, and the tools' own configuration (this file,
    // .dependency-cruiser.js, lint/*.js, vitest.config.ts), whose length is the length of its list of rules.
    files: ['**/*.ts', '**/*.js'],
    ignores: [
      'test/**',
      'bench/**',
      'examples/**',
      'eslint.config.js',
      '.dependency-cruiser.js',
      'lint/**',
      'vitest.config.ts',
    ],
    rules: {
      'max-lines': ['error', { max: 500, skipBlankLines: true, skipComments: false }],
      'max-lines-per-function': ['error', { max: 150, skipBlankLines: true, skipComments: false }],
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
