/**
 * A benchmark run as --json prints it, and the comparison of two runs (--baseline): every figure
 * of the tables, named by table caption, row label and column, beside the baseline's with the
 * ratio (this / baseline). A run without tables is compared on the numbers of its data. Pure.
 */
import { formatTable, type MachineInfo } from './common.js';
import type { DocTable } from './doc-block.js';

export interface BenchRun {
  bench: string;
  /** The flags it ran with. */
  args: string[];
  machine: MachineInfo;
  tables: readonly DocTable[];
  data?: unknown;
}

export interface Figure {
  name: string;
  value: number;
}

export interface ComparedFigure {
  name: string;
  value: number | undefined;
  baseline: number | undefined;
  /** value / baseline; undefined where either is missing or the baseline is 0. */
  ratio: number | undefined;
}

const NUMBER = /[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?/gi;

/** The numbers of a cell: `27.61 / 0.8123` has two, `1280x720` two, `-` none. */
export function numbersOf(cell: string): number[] {
  return (cell.replace(/\*\*/g, '').match(NUMBER) ?? []).map(Number).filter(Number.isFinite);
}

function unique(names: string[]): string[] {
  const seen = new Map<string, number>();
  return names.map((n) => {
    const count = (seen.get(n) ?? 0) + 1;
    seen.set(n, count);
    return count === 1 ? n : `${n} #${count}`;
  });
}

/** Every figure of the tables, named `caption › row › column` (the row label is the first cell). */
export function tableFigures(tables: readonly DocTable[]): Figure[] {
  const figures: Figure[] = [];
  const captions = unique(tables.map((t, i) => t.caption ?? `table ${i + 1}`));
  tables.forEach((table, t) => {
    const labels = unique(table.rows.map((r) => (r[0] ?? '').replace(/\*\*/g, '')));
    table.rows.forEach((row, r) => {
      row.forEach((cell, c) => {
        if (c === 0) return;
        const values = numbersOf(cell);
        values.forEach((value, i) => {
          const part = values.length > 1 ? ` [${i + 1}]` : '';
          figures.push({
            name: `${captions[t]} › ${labels[r]} › ${table.header[c] ?? `column ${c + 1}`}${part}`,
            value,
          });
        });
      });
    });
  });
  return figures;
}

/** Every number in a JSON value, named by its path; array items by their string fields where they have some. */
export function dataFigures(data: unknown, prefix = ''): Figure[] {
  if (typeof data === 'number') return Number.isFinite(data) ? [{ name: prefix || 'value', value: data }] : [];
  if (Array.isArray(data)) {
    const keys = unique(
      data.map((item, i) => {
        const labels =
          item !== null && typeof item === 'object' && !Array.isArray(item)
            ? Object.values(item).filter((v) => typeof v === 'string')
            : [];
        return labels.length > 0 ? labels.join(' ') : String(i);
      }),
    );
    return data.flatMap((item, i) => dataFigures(item, `${prefix}[${keys[i]}]`));
  }
  if (data !== null && typeof data === 'object') {
    return Object.entries(data).flatMap(([k, v]) => dataFigures(v, prefix === '' ? k : `${prefix}.${k}`));
  }
  return [];
}

export function runFigures(run: Pick<BenchRun, 'tables' | 'data'>): Figure[] {
  return run.tables.length > 0 ? tableFigures(run.tables) : dataFigures(run.data);
}

/** The figures of both runs in this run's order, then those only the baseline has. */
export function compareRuns(
  run: Pick<BenchRun, 'tables' | 'data'>,
  baseline: Pick<BenchRun, 'tables' | 'data'>,
): ComparedFigure[] {
  const now = runFigures(run);
  const before = new Map(runFigures(baseline).map((f) => [f.name, f.value]));
  const compared: ComparedFigure[] = now.map((f) => {
    const b = before.get(f.name);
    return { name: f.name, value: f.value, baseline: b, ratio: b === undefined || b === 0 ? undefined : f.value / b };
  });
  const names = new Set(now.map((f) => f.name));
  for (const [name, value] of before)
    if (!names.has(name)) compared.push({ name, value: undefined, baseline: value, ratio: undefined });
  return compared;
}

const shown = (x: number | undefined): string => (x === undefined ? '-' : String(Number(x.toPrecision(6))));

export function formatComparison(figures: readonly ComparedFigure[]): string {
  if (figures.length === 0) return '(no figures to compare)';
  const rows = figures.map((f) => [
    f.name,
    shown(f.value),
    shown(f.baseline),
    f.ratio === undefined ? '-' : f.ratio.toFixed(2),
  ]);
  return formatTable(['figure', 'this run', 'baseline', 'ratio'], rows);
}
