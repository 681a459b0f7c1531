/** The music backends an operator can list in MEDIA_WORKER_MUSIC_BACKENDS, and the list's parser. */
export const MUSIC_BACKEND_NAMES = ['musicgen', 'ace-step', 'suno-compatible'] as const;
export type MusicBackendName = (typeof MUSIC_BACKEND_NAMES)[number];

/** "musicgen" or "ace-step,musicgen": known names, no repeats, in order of preference. */
export function parseMusicBackends(value: string): MusicBackendName[] {
  const names = value.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const out: MusicBackendName[] = [];
  for (const name of names) {
    if (!(MUSIC_BACKEND_NAMES as readonly string[]).includes(name)) {
      throw new Error(`Expected a comma-separated list of ${MUSIC_BACKEND_NAMES.join(', ')} but received ${JSON.stringify(value)}`);
    }
    if (out.includes(name as MusicBackendName)) throw new Error(`Expected each music backend once but ${name} is listed twice`);
    out.push(name as MusicBackendName);
  }
  return out;
}
