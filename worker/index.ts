/**
 * `longrun/worker`: run the agent workflows and their activities in your own process, with your own tools and model
 * endpoint. `runAgentWorker` wires everything from the environment; `createAgentWorker` takes each part explicitly.
 */
export { runAgentWorker } from './run.ts';
export type { RunAgentWorkerOptions } from './run.ts';
export { bundleWorkflows, createAgentWorker } from './worker.ts';
export { installRuntime, metricsTelemetry } from './telemetry.ts';
export type { AgentWorkerOptions } from './worker.ts';
export type { ActivityDeps } from '../activities/index.ts';
export { loadSettings, SettingsError } from '../config/settings.ts';
export type { Settings } from '../config/settings.ts';
export { loadTemporalTarget, TemporalNotAnsweringError } from '../config/temporal.ts';
export { MissingSearchAttributesError } from '../config/search-attributes.ts';
export type { MissingSearchAttribute } from '../config/search-attributes.ts';
export type { TemporalTarget } from '../config/temporal.ts';
export { createOpenAI } from '../llm/openai.ts';
export type { ModelEndpoint } from '../llm/openai.ts';
export { S3BlobStore, s3TargetFromEnv } from '../storage/s3.ts';
export type { BlobStore, S3Target } from '../storage/s3.ts';
