#!/usr/bin/env python3
"""
Exports MuseTalk 1.5's five networks to the ONNX graphs media-worker runs
(src/kinds/lipsync/pipeline/musetalk/graph-contract.ts), from the official weights, on the operator's machine.

Needs: torch, diffusers, transformers, onnx; the weights as MuseTalk's download_weights.sh lays
them out (models/musetalkV15/{musetalk.json,unet.pth}, models/sd-vae/ = stabilityai/sd-vae-ft-mse,
models/whisper/ = openai/whisper-tiny). No code of MuseTalk's repository is imported: the wrappers
below repeat what its inference runs (scripts/inference.py, musetalk/models/{unet,vae}.py,
musetalk/utils/audio_processor.py).

  python3 scripts/export-musetalk-onnx.py --weights MuseTalk/models --out musetalk-onnx
  node dist/scripts/install-musetalk-model.js --from musetalk-onnx

Writes <out>/{whisper_encoder,positional_encoding,vae_encoder,unet,vae_decoder}.onnx (the UNet's
weights in unet.onnx.data: over 2 GB in float32) and <out>/SHA256SUMS. Not run on the project's
machines (they have no weights): check the graphs with the install script, which refuses any
that break the contract.
"""
import argparse
import hashlib
import json
import math
import os

import onnx
import torch
from diffusers import AutoencoderKL, UNet2DConditionModel
from transformers import WhisperModel

OPSET = 17


class WhisperEncoder(torch.nn.Module):
    """input_features [B, 80, 3000] -> hidden_states [B, 1500, 5, 384]: all hidden states, stacked on dim 2."""

    def __init__(self, whisper):
        super().__init__()
        self.encoder = whisper.encoder

    def forward(self, input_features):
        states = self.encoder(input_features, output_hidden_states=True).hidden_states
        return torch.stack(states, dim=2)


class PositionalEncoding(torch.nn.Module):
    """MuseTalk's sin/cos table (d_model 384, max_len 5000) added to audio_features [B, 50, 384]."""

    def __init__(self, d_model=384, max_len=5000):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, audio_features):
        return audio_features + self.pe[:, : audio_features.shape[1], :]


class VaeEncoder(torch.nn.Module):
    """image [B, 3, 256, 256] in [-1, 1] -> the posterior's mean x scaling_factor (the reference samples; the mean is its mode)."""

    def __init__(self, vae):
        super().__init__()
        self.vae = vae

    def forward(self, image):
        return self.vae.encode(image).latent_dist.mean * self.vae.config.scaling_factor


class VaeDecoder(torch.nn.Module):
    """latents [B, 4, 32, 32] -> image [B, 3, 256, 256] in about [-1, 1] (the worker clamps and rounds)."""

    def __init__(self, vae):
        super().__init__()
        self.vae = vae

    def forward(self, latents):
        return self.vae.decode(latents / self.vae.config.scaling_factor).sample


class Unet(torch.nn.Module):
    """sample [B, 8, 32, 32], encoder_hidden_states [B, 50, 384] -> latents [B, 4, 32, 32], at timestep 0."""

    def __init__(self, unet):
        super().__init__()
        self.unet = unet
        self.register_buffer("timestep", torch.tensor([0]))

    def forward(self, sample, encoder_hidden_states):
        return self.unet(sample, self.timestep, encoder_hidden_states=encoder_hidden_states).sample


def export(module, args, names, outputs, path):
    torch.onnx.export(
        module.eval(),
        args,
        path,
        input_names=names,
        output_names=outputs,
        dynamic_axes={n: {0: "B"} for n in names + outputs},
        opset_version=OPSET,
        do_constant_folding=True,
    )


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--weights", required=True, help="MuseTalk's models/ folder (download_weights.sh)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    w = args.weights
    os.makedirs(args.out, exist_ok=True)
    out = lambda name: os.path.join(args.out, name)

    with torch.no_grad():
        whisper = WhisperModel.from_pretrained(os.path.join(w, "whisper"))
        export(WhisperEncoder(whisper), (torch.zeros(1, 80, 3000),), ["input_features"], ["hidden_states"], out("whisper_encoder.onnx"))
        export(PositionalEncoding(), (torch.zeros(1, 50, 384),), ["audio_features"], ["encoded"], out("positional_encoding.onnx"))
        vae = AutoencoderKL.from_pretrained(os.path.join(w, "sd-vae"))
        export(VaeEncoder(vae), (torch.zeros(1, 3, 256, 256),), ["image"], ["latents"], out("vae_encoder.onnx"))
        export(VaeDecoder(vae), (torch.zeros(1, 4, 32, 32),), ["latents"], ["image"], out("vae_decoder.onnx"))
        with open(os.path.join(w, "musetalkV15", "musetalk.json")) as f:
            unet = UNet2DConditionModel(**json.load(f))
        unet.load_state_dict(torch.load(os.path.join(w, "musetalkV15", "unet.pth"), map_location="cpu"))
        export(Unet(unet), (torch.zeros(1, 8, 32, 32), torch.zeros(1, 50, 384)), ["sample", "encoder_hidden_states"], ["latents"], out("unet.onnx"))

    # The UNet is over 2 GB in float32: its weights go to unet.onnx.data beside it.
    model = onnx.load(out("unet.onnx"))
    for stale in os.listdir(args.out):
        if stale not in {f"{g}.onnx" for g in ("whisper_encoder", "positional_encoding", "vae_encoder", "unet", "vae_decoder")}:
            os.remove(out(stale))
    onnx.save_model(model, out("unet.onnx"), save_as_external_data=True, all_tensors_to_one_file=True, location="unet.onnx.data")

    files = sorted(f for f in os.listdir(args.out) if f.endswith(".onnx") or f.endswith(".onnx.data"))
    with open(out("SHA256SUMS"), "w") as f:
        for name in files:
            f.write(f"{sha256(out(name))}  {name}\n")
    print(open(out("SHA256SUMS")).read(), end="")


if __name__ == "__main__":
    main()
