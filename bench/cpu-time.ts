/**
 * CPU seconds of this process, or of process `pid` (every thread, ONNX Runtime's included) and of its reaped children
 * (ffmpeg), from /proc/self/stat: utime + stime + cutime + cstime. On a shared machine wall time
 * grows with the neighbours' load; CPU time is the work itself. Linux only (clock ticks of 10 ms).
 */
import { readFileSync } from 'node:fs';

export function cpuSeconds(pid: number | 'self' = 'self'): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): state is proc(5)'s field 3, so
  // utime (14), stime (15), cutime (16) and cstime (17) are at 11 to 14 here.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
  return ticks / 100;
}
