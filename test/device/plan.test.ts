import { describe, expect, it } from 'vitest';
import { CALL_LIMIT_BYTES, MIB, packParts, partBudget, runCalls, type PackItem } from '../../scripts/device/plan.js';

const item = (name: string, mib: number): PackItem => ({
  name,
  file: `${name}.tar.xz`,
  bytes: mib * MIB,
  sha256: name,
});

describe('partBudget', () => {
  it('leaves room for the working tree that travels with each part, and never exceeds 60 MiB', () => {
    expect(partBudget(0)).toBe(60 * MIB);
    expect(partBudget(5.3 * MIB)).toBeCloseTo(CALL_LIMIT_BYTES - 6.3 * MIB, 0);
    expect(partBudget(5.3 * MIB) + 5.3 * MIB).toBeLessThan(CALL_LIMIT_BYTES);
  });
});

describe('packParts', () => {
  it('fills parts largest first and keeps each within the budget', () => {
    const parts = packParts(
      [item('a', 30), item('b', 27), item('c', 20), item('d', 15), item('e', 12), item('f', 2)],
      57 * MIB,
    );
    for (const p of parts) expect(p.bytes).toBeLessThanOrEqual(57 * MIB);
    expect(parts.map((p) => p.items.map((i) => i.name))).toEqual([
      ['a', 'b'],
      ['c', 'd', 'e', 'f'],
    ]);
    expect(parts.map((p) => p.name)).toEqual(['p1', 'p2']);
  });

  it('refuses an item that cannot fit any part, naming it', () => {
    expect(() => packParts([item('x4plus-fp32', 64.7)], 57 * MIB)).toThrow(/x4plus-fp32 is 64\.7 MiB/);
  });
});

describe('runCalls', () => {
  it('unpacks every part but the last, which runs the check; one carried part per call', () => {
    const calls = runCalls([{ name: 'p1' }, { name: 'p2' }], '.device', 420);
    expect(calls.map((c) => c.carry)).toEqual([['.device/p1'], ['.device/p2']]);
    expect(calls[0]?.command).toMatch(/--unpack-only/);
    expect(calls[1]?.command).not.toMatch(/--unpack-only/);
    expect(calls[1]?.timeout_s).toBe(420);
    for (const c of calls) expect(c.command.length).toBeLessThanOrEqual(2000);
  });
});
