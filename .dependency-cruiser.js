// @ts-check
/**
 * The project's import rules, checked by dependency-cruiser (`npm run lint:deps`, part of `npm run lint` and of the
 * unit tests). Imports go one way, with no cycle: contract/ and engine/ at the bottom; workflows and activities beside
 * each other (the workflow sees the activities as types only); client/ and worker/ apart; commands/ on top. Each
 * rule names what a folder may not import, by folder, so it holds for files added later. Type imports count here:
 * a type import also ties one folder to another. What the workflow bundle runs (value imports only, followed
 * transitively) is the other file's rule: lint/workflow-bundle.js.
 */
import { builtinModules } from 'node:module';

/** A regular expression matching one of these top-level project folders (paths are relative to the root). */
const folders = (/** @type {string[]} */ ...names) => `^(${names.join('|')})/`;

/** Every Node built-in, as Node itself lists them, with or without the `node:` prefix. */
const NODE_BUILTINS = `^(node:)?(${builtinModules.map((name) => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})$`;

/** A project module, any folder (npm packages and Node built-ins are not). */
const PROJECT = /** @type {const} */ (['local']);

/**
 * How the code is read: TypeScript as written (type imports included), npm packages as leaves.
 * @type {import('dependency-cruiser').ICruiseOptions}
 */
export const options = {
  tsPreCompilationDeps: true,
  tsConfig: { fileName: 'tsconfig.json' },
  exclude: { path: '^(dist|\\.data|coverage)/' },
  doNotFollow: { path: 'node_modules' },
  enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
};

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-cycle',
      comment: 'No import cycle among the project modules (a cycle would also break the direction below).',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'engine-is-pure',
      comment: 'The engine is pure: it imports nothing of the project outside engine/.',
      severity: 'error',
      from: { path: folders('engine') },
      to: { dependencyTypes: [...PROJECT], pathNot: folders('engine') },
    },
    {
      name: 'contract-at-the-bottom',
      comment:
        'The contract is at the bottom: it imports only the engine (and @temporalio/common, @temporalio/workflow).',
      severity: 'error',
      from: { path: folders('contract') },
      to: { dependencyTypes: [...PROJECT], pathNot: folders('contract', 'engine') },
    },
    {
      name: 'activities-below-workflows',
      comment: 'Activities import the contract, never workflow code, the client or the worker.',
      severity: 'error',
      from: { path: folders('activities') },
      to: { path: folders('workflows', 'client', 'worker', 'commands') },
    },
    {
      name: 'client-apart',
      comment:
        'The client library imports the contract and config/, never the worker, workflow or activity code, or the commands.',
      severity: 'error',
      from: { path: folders('client') },
      to: { path: folders('worker', 'commands', 'activities', 'workflows', 'stack') },
    },
    {
      name: 'worker-apart',
      comment: 'The worker does not import the client library or the commands (commands/ composes them).',
      severity: 'error',
      from: { path: folders('worker') },
      to: { path: folders('client', 'commands') },
    },
    {
      name: 'infrastructure-below',
      comment: 'Infrastructure modules import only the contract, the engine and each other.',
      severity: 'error',
      from: { path: folders('llm', 'storage', 'config', 'stack', 'codec') },
      to: { path: folders('activities', 'workflows', 'client', 'worker', 'commands') },
    },
    // Workflow code is replayed: no I/O, no Node built-ins, no clients of the outside world.
    {
      name: 'workflow-activities-as-types',
      comment: 'Import activities as types only (the workflow calls them through proxyActivities).',
      severity: 'error',
      from: { path: folders('workflows') },
      to: { path: folders('activities'), dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'workflow-no-io-modules',
      comment: 'Workflow code must not import I/O modules.',
      severity: 'error',
      from: { path: folders('workflows') },
      to: { path: folders('storage', 'llm', 'stack', 'codec', 'worker', 'client', 'commands', 'config') },
    },
    {
      name: 'workflow-no-node-builtins',
      comment: 'Workflow code must not use Node built-ins (not replay-safe).',
      severity: 'error',
      from: { path: folders('workflows') },
      to: { path: NODE_BUILTINS },
    },
    {
      name: 'workflow-no-model-or-storage-client',
      comment:
        'Call the model and use storage from an activity (openai, @aws-sdk/client-s3), never from workflow code.',
      severity: 'error',
      from: { path: folders('workflows') },
      to: { path: '^node_modules/(openai|@aws-sdk/client-s3)/' },
    },
    {
      name: 'workflow-temporal-through-workflow-package',
      comment:
        'Workflow code talks to Temporal through @temporalio/workflow only (not the client, the worker or activity packages).',
      severity: 'error',
      from: { path: folders('workflows') },
      to: { path: '^node_modules/@temporalio/(client|worker|activity)/' },
    },
  ],
  options,
};
