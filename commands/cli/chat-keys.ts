/**
 * Ctrl-C in `longrun chat`: during a turn it interrupts that turn (the `interrupt` Update) and the chat goes on; a
 * second one, or one between turns, leaves. Before a message is sent (no worker took it yet) it leaves too, saying
 * that nothing was delivered. Copies of one press that a parent forwards (npm) count once, as the main job counts
 * them (worker/stopping.ts).
 */
import { SAME_PRESS_MS } from '../../worker/stopping.ts';

/** Where the chat is, as Ctrl-C sees it. */
export type ChatStage = 'idle' | 'sending' | 'turn' | 'interrupting';

export interface ChatKeysOptions {
  /** Sends the interrupt; what it resolves to or throws is the turn's business (see {@link ChatKeys.turnEnded}). */
  interrupt: () => Promise<unknown>;
  /** Says what a press did (stderr). */
  note: (line: string) => void;
  /** Leaves the chat (the CLI: exit 130). */
  leave: () => void;
  /** The clock, for presses that are one (default Date.now). */
  now?: () => number;
}

export class ChatKeys {
  stage: ChatStage = 'idle';
  /** The interrupt sent during the turn in progress, if one was. */
  private interrupting: Promise<unknown> | undefined;
  private lastPress = -Infinity;
  private readonly options: ChatKeysOptions;
  private readonly handler = () => this.press();

  constructor(options: ChatKeysOptions) {
    this.options = options;
  }

  /** Listens for Ctrl-C (SIGINT) until {@link dispose}. */
  listen(): this {
    process.on('SIGINT', this.handler);
    return this;
  }

  dispose(): void {
    process.off('SIGINT', this.handler);
  }

  /** A message is on its way: not sent until a worker polls the agent's queue. */
  sending(): void {
    this.stage = 'sending';
    this.interrupting = undefined;
  }

  /** The message was sent (the Update is out): its turn is under way. */
  sent(): void {
    if (this.stage === 'sending') this.stage = 'turn';
  }

  /** The turn's send has resolved: the interrupt sent meanwhile, if any, to wait for and report. */
  turnEnded(): Promise<unknown> | undefined {
    this.stage = 'idle';
    const interrupting = this.interrupting;
    this.interrupting = undefined;
    return interrupting;
  }

  /** One press of Ctrl-C. */
  press(): void {
    const now = (this.options.now ?? Date.now)();
    const samePress = now - this.lastPress < SAME_PRESS_MS;
    this.lastPress = now;
    if (samePress) return;
    if (this.stage === 'turn') {
      this.stage = 'interrupting';
      this.options.note('interrupting the turn in progress (Ctrl-C again leaves the chat)');
      this.interrupting = this.options.interrupt();
      this.interrupting.catch(() => {}); // reported when the turn ends
      return;
    }
    if (this.stage === 'sending') this.options.note('left before the message was sent: nothing was delivered');
    else if (this.stage === 'interrupting') this.options.note('left the chat; the interrupt was sent');
    this.options.leave();
  }
}
