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

/**
 * A rule: a module whose path matches `from` may not import one that matches `to`; `comment` says why (printed with
 * each violation).
 * @typedef {import('dependency-cruiser').IRegularForbiddenRuleType} Rule
 * @type {(name: string, comment: string, from: Rule['from'], to: Rule['to']) => Rule}
 */
const forbid = (name, comment, from, to) => ({ name, comment, severity: 'error', from, to });

/** Workflow code may not import what matches `to`. @type {(name: string, comment: string, to: Rule['to']) => Rule} */
const workflowForbids = (name, comment, to) => forbid(name, comment, { path: folders('workflows') }, to);

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    forbid(
      'no-cycle',
      'No import cycle among the project modules (a cycle would also break the direction below).',
      {},
      { circular: true },
    ),
    forbid(
      'engine-is-pure',
      'The engine is pure: it imports nothing of the project outside engine/.',
      { path: folders('engine') },
      { dependencyTypes: [...PROJECT], pathNot: folders('engine') },
    ),
    forbid(
      'contract-at-the-bottom',
      'The contract is at the bottom: it imports only the engine (and @temporalio/common, @temporalio/workflow).',
      { path: folders('contract') },
      { dependencyTypes: [...PROJECT], pathNot: folders('contract', 'engine') },
    ),
    forbid(
      'activities-below-workflows',
      'Activities import the contract, never workflow code, the client or the worker.',
      { path: folders('activities') },
      { path: folders('workflows', 'client', 'worker', 'commands') },
    ),
    forbid(
      'client-apart',
      'The client library imports the contract and config/, never the worker, workflow or activity code, or the commands.',
      { path: folders('client') },
      { path: folders('worker', 'commands', 'activities', 'workflows', 'stack') },
    ),
    forbid(
      'worker-apart',
      'The worker does not import the client library or the commands (commands/ composes them).',
      { path: folders('worker') },
      { path: folders('client', 'commands') },
    ),
    forbid(
      'infrastructure-below',
      'Infrastructure modules import only the contract, the engine and each other.',
      { path: folders('llm', 'storage', 'config', 'stack', 'codec') },
      { path: folders('activities', 'workflows', 'client', 'worker', 'commands') },
    ),
    // Workflow code is replayed: no I/O, no Node built-ins, no clients of the outside world.
    workflowForbids(
      'workflow-activities-as-types',
      'Import activities as types only (the workflow calls them through proxyActivities).',
      { path: folders('activities'), dependencyTypesNot: ['type-only'] },
    ),
    workflowForbids('workflow-no-io-modules', 'Workflow code must not import I/O modules.', {
      path: folders('storage', 'llm', 'stack', 'codec', 'worker', 'client', 'commands', 'config'),
    }),
    workflowForbids('workflow-no-node-builtins', 'Workflow code must not use Node built-ins (not replay-safe).', {
      path: NODE_BUILTINS,
    }),
    workflowForbids(
      'workflow-no-model-or-storage-client',
      'Call the model and use storage from an activity (openai, @aws-sdk/client-s3), never from workflow code.',
      { path: '^node_modules/(openai|@aws-sdk/client-s3)/' },
    ),
    workflowForbids(
      'workflow-temporal-through-workflow-package',
      'Workflow code talks to Temporal through @temporalio/workflow only (not the client, worker or activity packages).',
      { path: '^node_modules/@temporalio/(client|worker|activity)/' },
    ),
  ],
  options,
};
