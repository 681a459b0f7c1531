/**
 * Whether python3 runs here: the tests of the Python examples are skipped (and say so) where it does not.
 */
import { execFileSync } from 'node:child_process';

export const hasPython = (() => {
  try {
    execFileSync('python3', ['--version'], { stdio: 'ignore', timeout: 20_000 });
    return true;
  } catch {
    return false;
  }
})();
