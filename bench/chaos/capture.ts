/**
 * The errors a process would die of during a run: uncaught exceptions and unhandled promise rejections (a killed
 * child's stream, a socket, a timer racing a kill). While a capture is on, Node does not exit on them; each is kept
 * with its stack, and the first one is announced, so that the chaos driver stops the run and reports it as failed
 * with its cause instead of dying in the middle with its servers and worker left behind.
 */

export interface ProcessErrorCapture {
  /** Each error captured so far: its kind and its stack (or its value when it is not an Error). */
  readonly errors: string[];
  /** Resolves with the first error captured (never, when none is). */
  readonly first: Promise<string>;
  /** Stops capturing (Node's own handling applies again). */
  dispose(): void;
}

/** The kind of a captured error and its stack, as one text. */
export function describeProcessError(kind: 'uncaught exception' | 'unhandled rejection', error: unknown): string {
  const text = error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
  return `${kind}: ${text}`;
}

export function captureProcessErrors(): ProcessErrorCapture {
  const errors: string[] = [];
  let announce!: (error: string) => void;
  const first = new Promise<string>((resolve) => (announce = resolve));
  const keep = (text: string) => {
    errors.push(text);
    if (errors.length === 1) announce(text);
  };
  const onException = (error: unknown) => keep(describeProcessError('uncaught exception', error));
  const onRejection = (reason: unknown) => keep(describeProcessError('unhandled rejection', reason));
  process.on('uncaughtException', onException);
  process.on('unhandledRejection', onRejection);
  return {
    errors,
    first,
    dispose() {
      process.off('uncaughtException', onException);
      process.off('unhandledRejection', onRejection);
    },
  };
}
