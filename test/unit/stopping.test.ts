/** One Ctrl-C is one stop request, even when a forwarding parent (npm) delivers its SIGINT a second time. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { listenForStop, SAME_PRESS_MS } from '../../worker/stopping.ts';

afterEach(() => {
  vi.useRealTimers();
});

describe('listenForStop', () => {
  it('counts signals within SAME_PRESS_MS of each other as one press; a later one is the second', async () => {
    vi.useFakeTimers();
    const signals = listenForStop();
    const second = vi.fn();
    signals.onSecond(second);
    try {
      process.emit('SIGINT', 'SIGINT'); // the terminal's
      process.emit('SIGINT', 'SIGINT'); // npm's copy of it
      vi.advanceTimersByTime(SAME_PRESS_MS - 100);
      process.emit('SIGTERM', 'SIGTERM'); // still the same press
      expect(await signals.first).toBe('SIGINT');
      expect(signals.requested).toBe(true);
      expect(second).not.toHaveBeenCalled();
      vi.advanceTimersByTime(SAME_PRESS_MS + 1);
      process.emit('SIGINT', 'SIGINT'); // pressed again
      expect(second).toHaveBeenCalledOnce();
    } finally {
      signals.dispose();
    }
  });

  it('once a stop was asked, a copy of the signal that comes after dispose does not kill the process', async () => {
    const late = () => process.listeners('SIGINT').filter((listener) => listener.name === 'ignoreLateSignal');
    const signals = listenForStop();
    process.emit('SIGINT', 'SIGINT');
    await signals.first;
    signals.dispose();
    signals.dispose(); // twice: still one
    // A listener stays (Node's default, exiting by the signal, does not run), one however often a stop ends.
    expect(late()).toHaveLength(1);
    process.emit('SIGINT', 'SIGINT');
  });

  it('a listener that heard no signal leaves none behind', () => {
    const before = process.listenerCount('SIGINT');
    listenForStop().dispose();
    expect(process.listenerCount('SIGINT')).toBe(before);
  });
});
