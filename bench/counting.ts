/**
 * Token counting, all counters in one run on the same inputs: the production counter (longrun's own tokenizer over
 * gpt-tokenizer's rank data, `engine/tokenizer.ts`), js-tiktoken
 * (the reference) and tiktoken (the WASM port of OpenAI's Rust tokenizer). Reports throughput on a mixed 1 MB
 * corpus, µs per new message, and the pathological 64 KB inputs (js-tiktoken only on those it finishes quickly).
 */
import { createRequire } from 'node:module';
import { Tiktoken } from 'js-tiktoken/lite';
import o200k from 'js-tiktoken/ranks/o200k_base';
import { loadTokenCounter } from '../engine/tokens.ts';
import { mixedMessages, pathologicalInputs } from './corpus.ts';

type Count = (text: string) => number;

interface WasmEncoding {
  encode(text: string, allowed: string[], disallowed: string[]): Uint32Array;
}

function time(fn: () => void): number {
  const started = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - started) / 1e6;
}

function throughput(count: Count, messages: string[], bytes: number): number {
  for (const message of messages.slice(0, 200)) count(message); // warm up
  const ms = time(() => {
    for (const message of messages) count(message);
  });
  return bytes / 1e6 / (ms / 1000);
}

function perMessageP50(count: Count, messages: string[]): number {
  const samples = messages.slice(0, 2_000).map((message) => time(() => count(message)) * 1000);
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)]!;
}

/** `corpusBytes`: the size of the mixed corpus (1 MB; `npm run bench -- --short` a smaller one). */
export async function benchCounting(log: (line: string) => void, corpusBytes = 1024 * 1024) {
  const production = await loadTokenCounter('o200k_base');
  const reference = new Tiktoken(o200k);
  const wasm = (
    createRequire(import.meta.url)('tiktoken') as { get_encoding(name: string): WasmEncoding }
  ).get_encoding('o200k_base');
  const counters: Record<string, Count> = {
    production: (text) => production.count(text),
    jsTiktoken: (text) => reference.encode(text, [], []).length,
    tiktokenWasm: (text) => wasm.encode(text, [], []).length,
  };
  const messages = mixedMessages(corpusBytes);
  const bytes = messages.reduce((sum, m) => sum + Buffer.byteLength(m), 0);
  const results: Record<
    string,
    { mbPerSec: number; usPerNewMessageP50: number; pathologicalMs: Record<string, number | null> }
  > = {};
  for (const [name, count] of Object.entries(counters)) {
    const mbPerSec = throughput(count, messages, bytes);
    const usPerNewMessageP50 = perMessageP50(
      count,
      mixedMessages(corpusBytes / 4).map((m, i) => `${m} #${i}`),
    );
    const pathologicalMs: Record<string, number | null> = {};
    for (const [input, text] of Object.entries(pathologicalInputs())) {
      // js-tiktoken's merge is quadratic on one long piece: minutes on 64 KB of one letter or of Han; not run.
      const skip = name === 'jsTiktoken' && input !== 'base64-64KB';
      pathologicalMs[input] = skip ? null : time(() => count(text));
    }
    results[name] = { mbPerSec, usPerNewMessageP50, pathologicalMs };
    log(
      `${name.padEnd(13)} ${mbPerSec.toFixed(2).padStart(7)} MB/s  ${usPerNewMessageP50.toFixed(1).padStart(7)} µs/msg p50  ` +
        Object.entries(pathologicalMs)
          .map(([input, ms]) => `${input} ${ms === null ? 'not run' : `${ms.toFixed(0)} ms`}`)
          .join('  '),
    );
  }
  const finite = (values: (number | null)[]) => values.filter((v): v is number => v !== null);
  return {
    ...results,
    production: {
      ...results.production!,
      pathologicalMaxMs: Math.max(...finite(Object.values(results.production!.pathologicalMs))),
    },
    ratios: {
      productionVsJsTiktoken: results.production!.mbPerSec / results.jsTiktoken!.mbPerSec,
      productionVsTiktokenWasm: results.production!.mbPerSec / results.tiktokenWasm!.mbPerSec,
    },
    corpusBytes: bytes,
  };
}
