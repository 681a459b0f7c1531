/**
 * The lease rule (src/protocol/claims.ts), on entries as the server stores them (sequence, server
 * time): who holds a task, when a takeover counts, and whose event settles it. Pure: the times are
 * the server's, written out here, so nothing waits.
 */
import { describe, expect, it } from 'vitest';
import { leaseOf, settlingHost, type ClaimEntry, type ClaimOp } from '../../src/protocol/index.js';

let seq = 0;
const entry = (host: string, atMs: number, op: ClaimOp = 'claim', leaseMs: number | null = 1000): ClaimEntry => ({
  host,
  seq: ++seq,
  atMs,
  op,
  leaseMs,
});

describe('claims are leases', () => {
  it('nobody claimed: nobody holds or settles', () => {
    expect(leaseOf([])).toMatchObject({ holder: null, generation: 0, settled: false });
    expect(settlingHost(leaseOf([]))).toBeNull();
  });

  it('the first claim holds for its lease, renewed by its host; a lease settles nothing until its settle mark', () => {
    const lease = leaseOf([entry('a', 0), entry('a', 800, 'renew'), entry('a', 1600, 'renew')]);
    expect(lease).toMatchObject({ holder: 'a', generation: 1, expiresAtMs: 2600, settled: false, refused: [] });
    expect(settlingHost(lease)).toBeNull();
    const settled = leaseOf([entry('a', 0), entry('a', 900, 'settle')]);
    expect(settled).toMatchObject({ holder: 'a', settled: true, expiresAtMs: null });
    expect(settlingHost(settled)).toBe('a');
  });

  it("another host's claim while the lease holds is refused, whatever it says (claim, renew or settle)", () => {
    const lease = leaseOf([
      entry('a', 0),
      entry('b', 500),
      entry('b', 999, 'settle'),
      entry('a', 1000, 'renew'),
      entry('b', 1900, 'renew'),
    ]);
    expect(lease.holder).toBe('a');
    expect(lease.generation).toBe(1);
    expect(lease.refused.map((r) => [r.host, r.op])).toEqual([
      ['b', 'claim'],
      ['b', 'settle'],
      ['b', 'renew'],
    ]);
  });

  it('a claim stored after the lease lapsed takes the task over (generation 2); the old holder can neither renew nor settle it back', () => {
    const lease = leaseOf([
      entry('a', 0),
      entry('a', 500, 'renew'),
      entry('b', 1501),
      entry('a', 1600, 'renew'),
      entry('a', 1700, 'settle'),
      entry('b', 1800, 'settle'),
    ]);
    expect(lease).toMatchObject({ holder: 'b', generation: 2, settled: true });
    expect(settlingHost(lease)).toBe('b');
    expect(lease.refused.map((r) => [r.host, r.op])).toEqual([
      ['a', 'renew'],
      ['a', 'settle'],
    ]);
  });

  it('the lapse is exact to the server ms: a claim stored at the very end still loses', () => {
    expect(leaseOf([entry('a', 0), entry('b', 1000)]).holder).toBe('a');
    expect(leaseOf([entry('a', 0), entry('b', 1001)]).holder).toBe('b');
  });

  it('a lapsed lease nobody took over comes back to its holder (a host cut off for a while) and its settle mark counts', () => {
    const lease = leaseOf([entry('a', 0), entry('a', 5000, 'renew'), entry('a', 5100, 'settle')]);
    expect(settlingHost(lease)).toBe('a');
  });

  it('a settled task is final: no claim takes it over, however late', () => {
    const lease = leaseOf([entry('a', 0, 'settle'), entry('b', 1_000_000), entry('b', 1_000_001, 'settle')]);
    expect(settlingHost(lease)).toBe('a');
    expect(lease.refused).toHaveLength(2);
  });

  it('a claim without a lease (protocol 2.0) never lapses and settles as the first claim did', () => {
    const lease = leaseOf([entry('a', 0, 'claim', null), entry('b', 10_000_000)]);
    expect(lease).toMatchObject({ holder: 'a', expiresAtMs: null, settled: false });
    expect(settlingHost(lease)).toBe('a');
  });

  it('a host taking over a lapsed takeover is generation 3', () => {
    const lease = leaseOf([entry('a', 0), entry('b', 2000), entry('c', 3001), entry('c', 3100, 'settle')]);
    expect(lease).toMatchObject({ holder: 'c', generation: 3 });
    expect(settlingHost(lease)).toBe('c');
  });
});
