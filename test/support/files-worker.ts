/** A worker process with the `read_file` tool of the long-loop tests (test/support/files.ts). */
import { runAgentWorker } from '../../worker/run.ts';
import { readFile } from './files.ts';

await runAgentWorker({ tools: [readFile] });
