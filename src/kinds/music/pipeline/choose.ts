/**
 * Which configured backend serves a request: the first, in the operator's order, that can do what
 * the request needs and is ready. A request with lyrics needs a backend that sings them; a simple
 * request with vocals prefers one with vocals, and otherwise gets instrumental music from the
 * first ready backend (docs/contract.md, "Music generation"). Pure but for the readiness calls.
 */
import type { MusicBackend, MusicRequest, Readiness } from './types.js';

/** Why a backend cannot serve this request at all, or undefined when it can. */
export function unfit(backend: MusicBackend, request: MusicRequest, strict: boolean): string | undefined {
  const cap = backend.capabilities;
  if (request.lyrics !== undefined && !cap.lyrics) return `${backend.name} cannot sing lyrics`;
  if (strict && !request.instrumental && !cap.vocals) return `${backend.name} makes instrumental music only`;
  if (strict && request.mode === 'simple' && !request.instrumental && !cap.writesLyrics)
    return `${backend.name} cannot write lyrics`;
  return undefined;
}

export interface Choice {
  backend?: MusicBackend;
  /** One line per backend passed over, for the failure message and the log. */
  passed: string[];
}

export async function chooseBackend(
  backends: readonly MusicBackend[],
  request: MusicRequest,
  signal?: AbortSignal,
): Promise<Choice> {
  const passed: string[] = [];
  const readiness = new Map<MusicBackend, Readiness>();
  const ready = async (b: MusicBackend): Promise<Readiness> => {
    let r = readiness.get(b);
    if (r === undefined) {
      r = await b
        .readiness(signal)
        .catch((err: unknown) => ({ ready: false as const, reason: `${b.name}: ${(err as Error).message}` }));
      readiness.set(b, r);
    }
    return r;
  };
  // Strict first (everything the request asks for), then lenient (vocals dropped) for simple mode.
  for (const strict of [true, false]) {
    for (const backend of backends) {
      const why = unfit(backend, request, strict);
      if (why !== undefined) {
        if (!strict || unfit(backend, request, false) !== undefined) passed.push(why);
        continue;
      }
      const r = await ready(backend);
      if (r.ready) return { backend, passed };
      if (strict) passed.push(r.reason);
    }
  }
  return { passed: [...new Set(passed)] };
}
