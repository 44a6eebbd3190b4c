/**
 * The metric list (contract/metrics.ts) against what describes and queries it: docs/metrics.md lists every longrun
 * metric with its type, unit and labels, every label's values, and the SDK metrics the dashboard uses; the Grafana
 * dashboard (deploy/grafana/dashboards/longrun.json) queries only metrics of the two lists and has a panel for every
 * longrun metric. (That the worker serves them: test/e2e/metrics.test.ts.)
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { LABEL_VALUES, METRIC_LIST, SDK_METRICS } from '../../contract/metrics.ts';

const docs = readFileSync(join(PROJECT_ROOT, 'docs/metrics.md'), 'utf8');
const dashboard = JSON.parse(readFileSync(join(PROJECT_ROOT, 'deploy/grafana/dashboards/longrun.json'), 'utf8')) as {
  panels: { type: string; title: string; targets?: { expr: string }[] }[];
};

/** The cells of each table row of the docs whose first cell is a metric name in backticks. */
const rows = new Map(
  docs
    .split('\n')
    .filter((line) => /^\| `(longrun|temporal)_/.test(line))
    .map((line) => {
      const cells = line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim());
      return [cells[0]!.replaceAll('`', ''), cells.slice(1)] as const;
    }),
);
const names = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]);

/** A histogram's series names, a counter's or gauge's own. */
const seriesOf = (metric: { name: string; kind: string }) =>
  metric.kind === 'histogram' ? ['_bucket', '_sum', '_count'].map((suffix) => metric.name + suffix) : [metric.name];

describe('docs/metrics.md', () => {
  it('lists every longrun metric with its type, unit and labels, and no other', () => {
    for (const metric of METRIC_LIST) {
      const row = rows.get(metric.name);
      expect(row, `${metric.name} has a row`).toBeDefined();
      const [kind, unit, labels, meaning] = row!;
      expect(kind, metric.name).toBe(metric.kind);
      expect(unit, metric.name).toBe(metric.unit);
      expect(names(labels!), metric.name).toEqual([...metric.labels]);
      expect(meaning!.length, `${metric.name} says what it means`).toBeGreaterThan(40);
    }
    const documented = [...rows.keys()].filter((name) => name.startsWith('longrun_'));
    expect(documented).toEqual(METRIC_LIST.map((metric) => metric.name));
  });

  it("lists every label's values", () => {
    for (const [label, values] of Object.entries(LABEL_VALUES)) {
      const row = docs.split('\n').find((line) => line.startsWith(`| \`${label}\``));
      expect(row, `the label ${label} has a row`).toBeDefined();
      const documented = names(row!.split('|')[2]!);
      for (const value of values) expect(documented, `${label}: ${value}`).toContain(value);
    }
  });

  it('lists the SDK metrics of the list, with their type and labels', () => {
    for (const metric of SDK_METRICS) {
      const row = rows.get(metric.name);
      expect(row, `${metric.name} has a row`).toBeDefined();
      expect(row![0], metric.name).toBe(metric.kind);
      expect(names(row![1]!), metric.name).toEqual([...metric.labels]);
    }
    expect([...rows.keys()].filter((name) => name.startsWith('temporal_'))).toEqual(SDK_METRICS.map((m) => m.name));
  });
});

describe('the Grafana dashboard', () => {
  const queries = dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => target.expr));
  const queried = new Set(
    queries.flatMap((expr) => [...expr.matchAll(/\b(?:longrun|temporal)_[a-z0-9_]+/g)].map((m) => m[0])),
  );

  it('queries only metrics the worker exports (longrun and the SDK metrics of the list)', () => {
    const known = new Set([...METRIC_LIST, ...SDK_METRICS].flatMap(seriesOf));
    expect(queries.length).toBeGreaterThan(20);
    expect([...queried].filter((name) => !known.has(name))).toEqual([]);
  });

  it('has a panel for every longrun metric and every SDK metric of the list', () => {
    for (const metric of [...METRIC_LIST, ...SDK_METRICS]) {
      expect(
        seriesOf(metric).some((series) => queried.has(series)),
        `${metric.name} is queried`,
      ).toBe(true);
    }
  });

  it('groups only by labels the metrics have', () => {
    const labelsOf = new Map<string, readonly string[]>([
      ...METRIC_LIST.map((m) => [m.name, m.labels] as const),
      ...SDK_METRICS.map((m) => [m.name, m.labels] as const),
    ]);
    let checked = 0;
    for (const expr of queries) {
      for (const match of expr.matchAll(
        /sum by \(([^)]*)\) \((?:rate|increase)?\(?((?:longrun|temporal)_[a-z0-9_]+)/g,
      )) {
        const metric = match[2]!.replace(/_(bucket|sum|count)$/, '');
        const labels = labelsOf.get(metric) ?? labelsOf.get(match[2]!);
        const by = match[1]!
          .split(',')
          .map((label) => label.trim())
          .filter((label) => label !== 'le');
        for (const label of by) expect(labels, `${expr}: ${metric} has the label ${label}`).toContain(label);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(10);
  });
});
