/** The video upscale's command, `upscale-video`: what it says and which job it makes; the run is the upscale commands' shared one. */
import type { Command } from 'commander';
import { registerUpscaleCommand, type UpscaleCommandSpec } from '../../cli/upscale-command.js';

const SPEC: UpscaleCommandSpec = {
  name: 'upscale-video',
  model: 'vendor-video-upscale',
  urlField: 'video_url',
  summary: 'upscale one video (MP4, MOV or MKV, up to 60 s) frame by frame, streaming',
  hdrChoice: true,
  description:
    'Upscales INPUT by 1, 2 or 4 through ffmpeg pipes (no frame touches the disk) and writes an MP4, or a ' +
    'Matroska file for a Matroska or WebM input: H.264 for 8-bit SDR, HEVC Main10 for HDR (--hdr sdr tone-maps) ' +
    'and 10-bit input, every audio, subtitle and chapter kept (docs/contract.md, "Video fidelity"). The -o file ' +
    'must be named for that container: OUT.mp4 for a Matroska input is refused before the run, naming the ' +
    'extension to use (.mkv). Shows frames ' +
    'done, fps and ETA on stderr.',
};

export function registerUpscaleVideo(program: Command): void {
  registerUpscaleCommand(program, SPEC);
}
