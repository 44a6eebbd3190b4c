/**
 * What the soak reads every `sampleEvery` steps, from the outside as an operator would: the worker's memory (its own
 * report, memory.log), the current run's Temporal history (describe), the agent's state (query), every object under
 * the life's prefix by kind (one listing), searches timed against the life's index (a SearchIndex of the driver's,
 * kept between samples as a worker keeps its own), and the stream's length.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import type { Client } from '@temporalio/client';
import { agentState, agentHandle } from '../../client/agents.ts';
import { lifePrefix } from '../../contract/keys.ts';
import type { AgentLife } from '../../contract/keys.ts';
import { segmentStartOf } from '../../contract/stream.ts';
import type { StreamSegment } from '../../contract/stream.ts';
import { SearchIndex } from '../../storage/search-index.ts';
import type { S3BlobStore } from '../../storage/s3.ts';
import { percentile } from '../stats.ts';
import { markerOf } from './script.ts';

/** One sample. Figures that could not be read at that moment (a server down) are absent. */
export interface Sample {
  step: number;
  at: number;
  rssMb?: number;
  heapMb?: number;
  historyEvents?: number;
  historyBytes?: number;
  runs?: number;
  contextTokens?: number;
  contextMessages?: number;
  compactions?: number;
  /** Objects and bytes under the life's prefix, by its first folder (messages, originals, search, stream, …). */
  s3?: Record<string, { objects: number; bytes: number }>;
  searchP50Ms?: number;
  searchP99Ms?: number;
  /** Queries of this sample whose marker's step came back among the hits. */
  searchFound?: number;
  streamItems?: number;
  /** What failed to be read, if anything. */
  errors?: string[];
}

/** The last line of the worker's memory.log: its RSS and heap in MB. */
export function workerMemory(dir: string): { rssMb: number; heapMb: number } | undefined {
  const file = join(dir, 'memory.log');
  if (!existsSync(file)) return undefined;
  const text = readFileSync(file, 'utf8');
  const last = text.trimEnd().split('\n').at(-1);
  if (!last) return undefined;
  const [, rss, heap] = last.split(' ').map(Number);
  return { rssMb: rss! / 2 ** 20, heapMb: heap! / 2 ** 20 };
}

/** Every object under `prefix` with its size (S3 lists a thousand at a time). */
async function listSized(store: S3BlobStore, prefix: string): Promise<{ key: string; size: number }[]> {
  const out: { key: string; size: number }[] = [];
  for (;;) {
    const page = await store.client.send(
      new ListObjectsV2Command({
        Bucket: store.bucket,
        Prefix: prefix,
        ...(out.length ? { StartAfter: out.at(-1)!.key } : {}),
        MaxKeys: 1_000,
      }),
    );
    const objects = page.Contents ?? [];
    out.push(...objects.flatMap((o) => (o.Key ? [{ key: o.Key, size: o.Size ?? 0 }] : [])));
    if (!page.IsTruncated) return out;
  }
}

export class Sampler {
  private readonly search: SearchIndex;
  private readonly client: Client;
  private readonly store: S3BlobStore;
  private readonly agentId: string;
  private readonly dir: string;
  constructor(client: Client, store: S3BlobStore, agentId: string, dir: string) {
    this.client = client;
    this.store = store;
    this.agentId = agentId;
    this.dir = dir;
    this.search = new SearchIndex(store);
  }

  /** A sample at `step` (the task's own step `at`): each figure read on its own, so one that fails leaves the others. */
  async take(step: number, at: { task: number; step: number }, life: AgentLife): Promise<Sample> {
    const sample: Sample = { step, at: Date.now(), ...workerMemory(this.dir) };
    const errors: string[] = [];
    // Each read tried three times, 3 s apart: a worker starting again after a kill answers queries within seconds.
    const attempt = async (what: string, read: () => Promise<void>) => {
      for (let tries = 1; ; tries++) {
        try {
          return await read();
        } catch (error) {
          if (tries === 3) return void errors.push(`${what}: ${String(error).split('\n')[0]}`);
          await sleep(3_000);
        }
      }
    };
    await attempt('history', async () => {
      const description = await agentHandle(this.client, this.agentId).describe();
      sample.historyEvents = description.historyLength;
      if (description.historySize !== undefined) sample.historyBytes = description.historySize;
    });
    await attempt('state', async () => {
      const state = await agentState(this.client, this.agentId);
      sample.runs = state.runs ?? 1;
      sample.contextTokens = state.contextTokens;
      sample.contextMessages = state.messages.length;
      sample.compactions = state.compactions ?? 0;
    });
    const prefix = lifePrefix(life);
    let streamKeys: string[] = [];
    await attempt('storage', async () => {
      const s3: NonNullable<Sample['s3']> = {};
      for (const { key, size } of await listSized(this.store, prefix)) {
        const kind = key.slice(prefix.length).split('/')[0]!;
        const entry = (s3[kind] ??= { objects: 0, bytes: 0 });
        entry.objects++;
        entry.bytes += size;
        if (kind === 'stream') streamKeys.push(key);
      }
      sample.s3 = s3;
    });
    await attempt('stream', async () => {
      const last = streamKeys
        .filter((k) => segmentStartOf(k) !== undefined)
        .sort()
        .at(-1);
      if (!last) return;
      const segment = JSON.parse((await this.store.get(last))!) as StreamSegment;
      sample.streamItems = segmentStartOf(last)! + segment.items.length;
    });
    streamKeys = [];
    await attempt('search', async () => {
      const times: number[] = [];
      let found = 0;
      // Markers of steps spread over the task so far: the recent ones and those long gone from the context.
      for (const back of [5, 50, 250, 1_000, 4_000]) {
        const target = Math.max(1, at.step - back);
        const started = performance.now();
        const hits = await this.search.search(life, `marker ${markerOf(at.task, target)}`, { limit: 3 });
        times.push(performance.now() - started);
        if (hits.some((h) => h.snippet.includes(markerOf(at.task, target)))) found++;
      }
      sample.searchP50Ms = percentile(times, 50)!;
      sample.searchP99Ms = percentile(times, 99)!;
      sample.searchFound = found;
    });
    if (errors.length) sample.errors = errors;
    return sample;
  }
}
