"""Static int8 QDQ quantization of the Real-ESRGAN graphs.
usage: quantize.py NET VARIANT   (see VARIANTS below)"""
import os, sys, time
import onnx
from onnxruntime.quantization import (quantize_static, CalibrationDataReader, QuantFormat,
                                      QuantType, CalibrationMethod)
from onnxruntime.quantization.shape_inference import quant_pre_process
import common

H = common.HERE


class Reader(CalibrationDataReader):
    def __init__(self, net):
        self.it = iter([{'input': c} for c in common.calib_inputs(net)])

    def get_next(self):
        return next(self.it, None)


def first_last_convs(path):
    """Names of the first and last Conv and of every node before the first / after the last
    (x4fast: input Mul; DepthToSpace, Resize, Add, output Mul): these stay fp32."""
    m = onnx.load(path, load_external_data=False)
    nodes = list(m.graph.node)  # topologically sorted
    idx = [k for k, n in enumerate(nodes) if n.op_type == 'Conv']
    keep = set(range(0, idx[0] + 1)) | set(range(idx[-1], len(nodes)))
    # Resize of the input feeds the final Add in x4fast: keep it fp32 too
    keep |= {k for k, n in enumerate(nodes) if n.op_type == 'Resize'}
    return [nodes[k].name for k in sorted(keep)]


def fix_name_clash(path):
    """x4fast has Mul constants called 'input_scale' and 'output_scale'. The quantizer names the
    scale of tensor T 'T_scale', so for the graph's input 'input' and output 'output' it reuses
    those names and the graph comes out wrong (PSNR ~6 dB). Rename such initializers."""
    m = onnx.load(path)
    tensors = {x for n in m.graph.node for x in list(n.input) + list(n.output)}
    tensors |= {i.name for i in m.graph.input} | {o.name for o in m.graph.output}
    clash = {i.name for i in m.graph.initializer
             if any(i.name == t + suf for t in tensors for suf in ('_scale', '_zero_point'))}
    for i in m.graph.initializer:
        if i.name in clash:
            i.name = i.name + '_const'
    for n in m.graph.node:
        for k, x in enumerate(n.input):
            if x in clash:
                n.input[k] = x + '_const'
    print('renamed initializers', sorted(clash), flush=True)
    onnx.save(m, path)


# name: (calibration method, activation type, exclude first/last conv, op types, extra)
VARIANTS = {
    'int8-minmax':        (CalibrationMethod.MinMax, QuantType.QUInt8, False, None, {}),
    'int8-minmax-s8s8':   (CalibrationMethod.MinMax, QuantType.QInt8, False, None, {}),
    'int8-minmax-io32':   (CalibrationMethod.MinMax, QuantType.QUInt8, True, None, {}),
    # only Conv (+ its weights) quantized; LeakyRelu/Concat/Add/Mul/Resize stay fp32
    'int8-minmax-convonly': (CalibrationMethod.MinMax, QuantType.QUInt8, False, ['Conv'], {}),
    'int8-pct':           (CalibrationMethod.Percentile, QuantType.QUInt8, False, None,
                           {'CalibPercentile': 99.999}),
    'int8-entropy':       (CalibrationMethod.Entropy, QuantType.QUInt8, False, None, {}),
    'int8-pct-io32':      (CalibrationMethod.Percentile, QuantType.QUInt8, True, None,
                           {'CalibPercentile': 99.999}),
    'int8-pct9999-io32':  (CalibrationMethod.Percentile, QuantType.QUInt8, True, None,
                           {'CalibPercentile': 99.99}),
}

def chunked_histogram_calibration(pre, net, method, extra, cache, chunk=4):
    """Percentile/Entropy calibrators keep every activation of every sample in memory before
    building histograms; feed them a few samples at a time instead and save the ranges in
    quantize_static's cache format."""
    from onnxruntime.quantization.calibrate import create_calibrator, save_tensors_data
    opts = {'symmetric': False}
    if 'CalibPercentile' in extra:
        opts['percentile'] = extra['CalibPercentile']
    cal = create_calibrator(pre, None, augmented_model_path=f'{H}/models/{net}-augmented.onnx',
                            calibrate_method=method, extra_options=opts)
    data = [{'input': c} for c in common.calib_inputs(net)]
    for k in range(0, len(data), chunk):
        it = iter(data[k:k + chunk])

        class R(CalibrationDataReader):
            def get_next(self):
                return next(it, None)
        cal.collect_data(R())
        print('calibrated', min(k + chunk, len(data)), '/', len(data), flush=True)
    save_tensors_data(cal.compute_data(), cache)


if __name__ == '__main__':
    net, variant = sys.argv[1], sys.argv[2]
    method, act, io32, ops, extra = VARIANTS[variant]
    src = common.MODELS[net]
    pre = f'{H}/models/{net}-pre.onnx'
    if not os.path.exists(pre):
        t = time.time()
        quant_pre_process(src, pre, skip_symbolic_shape=True)
        fix_name_clash(pre)
        print('pre-process', round(time.time() - t, 1), 's', flush=True)
    cache = f'{H}/models/{net}-calib-{method.name}' + ('-'.join([''] + [f'{k}{v}' for k, v in extra.items()])) + '.json'
    excl = first_last_convs(pre) if io32 else []
    out = f'{H}/models/{net}-{variant}.onnx'
    t = time.time()
    if method != CalibrationMethod.MinMax and not os.path.exists(cache):
        chunked_histogram_calibration(pre, net, method, extra, cache)
    quantize_static(pre, out, Reader(net), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=act, weight_type=QuantType.QInt8, calibrate_method=method,
                    nodes_to_exclude=excl, op_types_to_quantize=ops,
                    # NB: no CalibMaxIntermediateOutputs: in ORT 1.30 MinMaxCalibrater drops each
                    # full chunk (clear_collected_data without compute_data), so the ranges come
                    # from the last partial chunk only. MinMax keeps only ReduceMin/Max outputs,
                    # so memory is small without it.
                    extra_options=dict(extra),
                    calibration_cache_path=cache)
    print(net, variant, 'excluded', excl, 'took', round(time.time() - t, 1), 's ->', out,
          os.path.getsize(out), 'bytes', flush=True)
