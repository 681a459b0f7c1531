/**
 * The ONNX interface of MuseTalk 1.5's five graphs, as the export recipe in docs/lipsync.md writes
 * them from the official weights and as the `musetalk-test` generator (test-networks.ts) builds
 * them. Every tensor is float32; B is the batch (frames per call, or 30 s segments for the encoder).
 *
 *   whisper_encoder      input_features [B, 80, 3000] (whisper-mel.ts)
 *                        -> hidden_states [B, 1500, 5, 384] (the embeddings and 4 layers, stacked)
 *   positional_encoding  audio_features [B, 50, 384] (audio-window.ts) -> encoded [B, 50, 384]
 *   vae_encoder          image [B, 3, 256, 256] RGB in [-1, 1] (crop.ts)
 *                        -> latents [B, 4, 32, 32] (the posterior's mean x 0.18215)
 *   unet                 sample [B, 8, 32, 32] (masked latents, reference latents),
 *                        encoder_hidden_states [B, 50, 384] -> latents [B, 4, 32, 32]; timestep 0
 *                        is part of the graph (MuseTalk runs one step)
 *   vae_decoder          latents [B, 4, 32, 32] -> image [B, 3, 256, 256] RGB in [-1, 1]
 *
 * The reference samples the VAE posterior (latent_dist.sample()) at inference; its training uses
 * the mode. The exported encoder returns the mean (= the mode), so a frame always gives the same
 * result.
 */

export type TensorDim = number | 'B';

export interface GraphTensor {
  name: string;
  shape: readonly TensorDim[];
}

export interface GraphContract {
  /** File name stem: <graph>.onnx. */
  graph: MuseTalkGraph;
  inputs: readonly GraphTensor[];
  outputs: readonly GraphTensor[];
}

export const MUSETALK_GRAPHS = [
  'whisper_encoder',
  'positional_encoding',
  'vae_encoder',
  'unet',
  'vae_decoder',
] as const;
export type MuseTalkGraph = (typeof MUSETALK_GRAPHS)[number];

export const MUSETALK_LATENT_CHANNELS = 4;
export const MUSETALK_LATENT_SIZE = 32;
export const MUSETALK_IMAGE_SIZE = 256;
/** sd-vae-ft-mse's scaling_factor. */
export const VAE_SCALING_FACTOR = 0.18215;

export const MUSETALK_CONTRACTS: Readonly<Record<MuseTalkGraph, GraphContract>> = Object.freeze({
  whisper_encoder: {
    graph: 'whisper_encoder',
    inputs: [{ name: 'input_features', shape: ['B', 80, 3000] }],
    outputs: [{ name: 'hidden_states', shape: ['B', 1500, 5, 384] }],
  },
  positional_encoding: {
    graph: 'positional_encoding',
    inputs: [{ name: 'audio_features', shape: ['B', 50, 384] }],
    outputs: [{ name: 'encoded', shape: ['B', 50, 384] }],
  },
  vae_encoder: {
    graph: 'vae_encoder',
    inputs: [{ name: 'image', shape: ['B', 3, 256, 256] }],
    outputs: [{ name: 'latents', shape: ['B', 4, 32, 32] }],
  },
  unet: {
    graph: 'unet',
    inputs: [
      { name: 'sample', shape: ['B', 8, 32, 32] },
      { name: 'encoder_hidden_states', shape: ['B', 50, 384] },
    ],
    outputs: [{ name: 'latents', shape: ['B', 4, 32, 32] }],
  },
  vae_decoder: {
    graph: 'vae_decoder',
    inputs: [{ name: 'latents', shape: ['B', 4, 32, 32] }],
    outputs: [{ name: 'image', shape: ['B', 3, 256, 256] }],
  },
});

/** What a loaded graph declares: names and dims (a string for a symbolic dim, as ONNX Runtime reports). */
export interface DeclaredTensor {
  name: string;
  type: string;
  shape: readonly (number | string)[];
}

/**
 * The ways a graph's declared inputs and outputs break its contract (empty: it holds). A symbolic
 * batch dim may have any name; every other dim must be the number itself; every tensor float32.
 */
export function contractProblems(
  contract: GraphContract,
  inputs: readonly DeclaredTensor[],
  outputs: readonly DeclaredTensor[],
): string[] {
  const problems: string[] = [];
  const check = (kind: string, want: readonly GraphTensor[], got: readonly DeclaredTensor[]): void => {
    for (const tensor of want) {
      const found = got.find((t) => t.name === tensor.name);
      if (found === undefined) {
        problems.push(
          `${contract.graph}: no ${kind} named ${tensor.name} (it has ${got.map((t) => t.name).join(', ') || 'none'})`,
        );
        continue;
      }
      if (found.type !== 'float32')
        problems.push(`${contract.graph}: ${kind} ${tensor.name} is ${found.type}, expected float32`);
      const ok =
        found.shape.length === tensor.shape.length &&
        tensor.shape.every((d, i) =>
          d === 'B' ? typeof found.shape[i] === 'string' || found.shape[i] === -1 : found.shape[i] === d,
        );
      if (!ok)
        problems.push(
          `${contract.graph}: ${kind} ${tensor.name} has shape [${found.shape.join(', ')}], expected [${tensor.shape.join(', ')}]`,
        );
    }
    const extra = got.filter((t) => !want.some((w) => w.name === t.name));
    if (extra.length > 0)
      problems.push(`${contract.graph}: unexpected ${kind}s ${extra.map((t) => t.name).join(', ')}`);
  };
  check('input', contract.inputs, inputs);
  check('output', contract.outputs, outputs);
  return problems;
}
