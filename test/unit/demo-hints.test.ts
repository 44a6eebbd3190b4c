/** What `npm start`'s demo suggests trying after its conversation: only what the servers left running can answer. */
import { describe, expect, it } from 'vitest';
import { DEMO_INTERRUPT, DEMO_STEER, demoHints } from '../../commands/demo.ts';
import { toolDemoTask } from '../../llm/endpoint.ts';

describe('the demo’s hints', () => {
  it('offline, while the servers run: the tool loop, how to watch it, and how to steer and interrupt it', () => {
    const hints = demoHints({ replayed: true, once: false }).join('\n');
    expect(hints).toContain('`npx longrun start hike`');
    expect(hints).toContain(`\`npx longrun send hike '${toolDemoTask()}'\``);
    expect(hints).toContain('`npx longrun watch hike`');
    expect(hints).toContain(`\`npx longrun steer hike '${DEMO_STEER}'\``);
    expect(hints).toContain(`\`npx longrun interrupt hike '${DEMO_INTERRUPT}'\``);
  });

  it('with --once, no command to try against servers about to stop: it says what --once does instead', () => {
    for (const replayed of [true, false]) {
      const hints = demoHints({ replayed, once: true }).join('\n');
      expect(hints).not.toContain('npx longrun start');
      expect(hints).not.toMatch(/\btry\b/);
      expect(hints).toContain('--once: the demo agent is closed and the servers stop now');
      expect(hints).toContain('run `npm start` without --once to keep them up');
    }
  });

  it('with a real model and the servers running: no offline tool loop to offer', () => {
    expect(demoHints({ replayed: false, once: false })).toEqual([]);
  });
});
