/** The image upscale's command, `upscale-image`: what it says and which job it makes; the run is the upscale commands' shared one. */
import type { Command } from 'commander';
import path from 'node:path';
import { registerUpscaleCommand, type UpscaleCommandSpec } from '../../cli/upscale-command.js';
import { DEFAULT_SAMPLE_IMAGE } from '../../paths.js';

const SPEC: UpscaleCommandSpec = {
  name: 'upscale-image',
  model: 'vendor-image-upscale',
  urlField: 'image_url',
  summary: 'upscale one image (JPEG, PNG or WebP) with the super-resolution network',
  description:
    'Upscales INPUT by 1, 2 or 4 and writes the result in the same format (an -o file named with another ' +
    "format's extension is refused before the run). The default network " +
    '(Real-ESRGAN x4plus, MEDIA_WORKER_SR_MODELS) upscales x4; factors 2 and 1 are its output brought ' +
    'down by a Lanczos resize, so 1 enhances at the same resolution. Without INPUT, the bundled sample photo ' +
    `is used (${path.relative(process.cwd(), DEFAULT_SAMPLE_IMAGE)}).`,
  defaultInput: DEFAULT_SAMPLE_IMAGE,
};

export function registerUpscaleImage(program: Command): void {
  registerUpscaleCommand(program, SPEC);
}
