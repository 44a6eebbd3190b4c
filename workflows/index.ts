/** Workflow entry point bundled by the worker: every workflow type longrun registers. */
export { agentWorkflow } from './agent.ts';
