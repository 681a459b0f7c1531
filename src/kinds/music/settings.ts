/** The music backends an operator can list in MEDIA_WORKER_MUSIC_BACKENDS, and the list's parser. */
import { parseNameList } from '../../settings-table.js';

export const MUSIC_BACKEND_NAMES = ['musicgen', 'ace-step', 'suno-compatible'] as const;
export type MusicBackendName = (typeof MUSIC_BACKEND_NAMES)[number];

/** "musicgen" or "ace-step,musicgen": known names, no repeats, in order of preference. */
export function parseMusicBackends(value: string): MusicBackendName[] {
  return parseNameList(value, MUSIC_BACKEND_NAMES, 'music backend');
}
