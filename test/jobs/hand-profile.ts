/**
 * A hardware profile whose arithmetic can be done by hand: only the network costs time, 1 s per
 * 4,096,000 multiply-adds; and a network of 1000 MACs per input pixel in 64x64 tiles without
 * overlap, so a 64x64 frame through it is exactly 1 s.
 */
import type { SrNetworkCost } from '../../src/jobs/cost-model.js';
import type { HardwareProfile } from '../../src/jobs/hardware-classes.js';

export const HAND: HardwareProfile = {
  name: 'cpu',
  basis: 'measured',
  cores: 1,
  networkMacsPerSecond: 4_096_000,
  decodeSecondsPerMegapixel: 0,
  encodeSecondsPerMegapixel: 0,
  imageCodecSecondsPerMegapixel: 0,
  overlapsCodecs: true,
  setupSeconds: 0,
};

export const NET: SrNetworkCost = { name: 'test-x2', scale: 2, macsPerInputPixel: 1000, tile: 64, overlap: 0 };
