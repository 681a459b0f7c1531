import { InvalidArgumentError } from 'commander';

/** A commander argument parser for positive integers, worded like every other bad-argument message. */
export function parsePositiveInt(flag: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n <= 0)
      throw new InvalidArgumentError(`Expected a positive integer for ${flag} but received ${JSON.stringify(value)}`);
    return n;
  };
}
