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
