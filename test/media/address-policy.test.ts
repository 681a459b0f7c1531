import { describe, expect, it } from 'vitest';
import { checkAddress, parseCidrs } from '../../src/media/address-policy.js';

describe('checkAddress: only global unicast passes', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.5.4', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['0.0.0.0', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['224.0.0.1', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link-local'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['ff02::1', 'multicast'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:169.254.169.254', 'IPv4-mapped link-local'],
    ['[::ffff:10.0.0.1]', 'IPv4-mapped private'],
    ['64:ff9b::a00:1', 'NAT64'],
    ['2002:a00:1::', '6to4'],
    ['2001:db8::1', 'reserved'],
    ['::a00:1', 'non-global IPv6'],
    ['fec0::1', 'site-local'],
    ['not-an-ip', 'invalid'],
    ['', 'invalid'],
  ])('refuses %s (%s)', (ip, range) => {
    expect(checkAddress(ip)).toEqual({ allowed: false, range });
  });

  it.each(['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700:4700::1111', '2a00:1450:4001::1', '::ffff:8.8.8.8'])(
    'allows %s',
    (ip) => {
      expect(checkAddress(ip)).toEqual({ allowed: true });
    },
  );

  it('allows everything with allowPrivate (local development), except non-addresses', () => {
    expect(checkAddress('127.0.0.1', { allowPrivate: true })).toEqual({ allowed: true });
    expect(checkAddress('169.254.169.254', { allowPrivate: true })).toEqual({ allowed: true });
    expect(checkAddress('nope', { allowPrivate: true })).toEqual({ allowed: false, range: 'invalid' });
  });

  it('allows exactly the extra ranges it is given', () => {
    const policy = { allowedCidrs: ['127.0.0.1/32', '10.20.0.0/16', 'fd00::1'] };
    expect(checkAddress('127.0.0.1', policy)).toEqual({ allowed: true });
    expect(checkAddress('::ffff:127.0.0.1', policy)).toEqual({ allowed: true });
    expect(checkAddress('10.20.30.40', policy)).toEqual({ allowed: true });
    expect(checkAddress('fd00::1', policy)).toEqual({ allowed: true });
    expect(checkAddress('127.0.0.2', policy)).toEqual({ allowed: false, range: 'loopback' });
    expect(checkAddress('10.21.0.1', policy)).toEqual({ allowed: false, range: 'private' });
    expect(checkAddress('fd00::2', policy)).toEqual({ allowed: false, range: 'unique-local' });
  });

  it('words a malformed range consistently', () => {
    expect(() => parseCidrs(['10.0.0.0/8', '10.0.0/33'])).toThrow(
      'Expected a CIDR range for the allowed address list but received "10.0.0/33"',
    );
  });
});
