/** Music's price (spec 4.4): one fixed price per generation (two songs). */

export const MUSIC_CREDITS = 15;

export interface MusicPrice {
  creditsUsed: number;
}

export function priceMusic(): MusicPrice {
  return { creditsUsed: MUSIC_CREDITS };
}
