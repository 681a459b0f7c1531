/**
 * `vendor-music-video`: a song and its cover made into an MP4 with a visualiser (docs/music-video.md).
 * Its contract half (parser, price, quote) is in src/kinds/music-video/contract/; here, the render and readiness.
 */
// The contract half lives in src/kinds/music-video/contract/ (the gateway reads it); offered here too,
// so that the pipeline's users (the command line, the benchmark) have one way in.
export {
  DEFAULT_MUSIC_VIDEO_ASPECT_RATIO,
  DEFAULT_MUSIC_VIDEO_STYLE,
  MUSIC_VIDEO_ASPECT_RATIOS,
  MUSIC_VIDEO_AUDIO_CONTAINERS,
  MUSIC_VIDEO_ERROR_CODES,
  MUSIC_VIDEO_FAILURE_CODE,
  MUSIC_VIDEO_FPS,
  MUSIC_VIDEO_IMAGE_FORMATS,
  MUSIC_VIDEO_MAX_AUDIO_SECONDS,
  MUSIC_VIDEO_MODEL,
  MUSIC_VIDEO_RESULT_URL_LIFETIME_DAYS,
  MUSIC_VIDEO_SIZES,
  MUSIC_VIDEO_STYLES,
  MUSIC_VIDEO_TITLE_MAX_CHARS,
  MUSIC_VIDEO_CREDITS_PER_SECOND,
  MUSIC_VIDEO_MINIMUM_CREDITS,
  musicVideoInputSchema,
  parseMusicVideoInput,
  priceMusicVideo,
  checkMusicVideoAudioLength as checkAudioLength,
  audioMeasureArgs,
  measureAudioSeconds,
  quoteMusicVideo,
  type MeasureOptions,
  type MusicVideoAspectRatio,
  type MusicVideoInput,
  type MusicVideoJob,
  type MusicVideoPrice,
  type MusicVideoQuote,
  type MusicVideoQuoteInput,
  type MusicVideoStyle,
  type QuotedMusicVideoJob,
  type QuotedMusicVideoJob as QuotedMusicVideo,
} from '../../../jobs/index.js';
export {
  ENCODER_SETTINGS,
  filterGraph,
  frameCount,
  renderArgs,
  type EncoderSettings,
  type RenderPlan,
} from './render-args.js';
export {
  RENDER_STAGE,
  renderInputs,
  renderMusicVideo,
  type RenderMusicVideoOptions,
  type RenderedMusicVideo,
} from './render.js';
export {
  musicVideoReadiness,
  REQUIRED_DEMUXERS,
  REQUIRED_ENCODERS,
  REQUIRED_FILTERS,
  type MusicVideoReadiness,
  type ReadinessOptions,
} from './readiness.js';
export { layoutFor, type MusicVideoLayout } from './layout.js';
