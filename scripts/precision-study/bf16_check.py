"""Does ORT 1.30 CPU EP run fp16 / bf16 versions of the graphs, and what happens to the kernels?"""
import time, numpy as np, onnx, onnxruntime as ort
import common
from onnx import helper, numpy_helper, TensorProto
import ml_dtypes

so = ort.SessionOptions(); so.intra_op_num_threads = 2
x = np.random.default_rng(0).integers(0, 256, (1, 3, 64, 64)).astype(np.float32)

# 1) the shipped fp16 x4fast graph: which nodes run in fp16, which get Casts?
m = onnx.load(f'{common.ROOT}/models/realesrgan-x4fast-fp16.onnx')
print('fp16 graph inputs', [(i.name, i.type.tensor_type.elem_type) for i in m.graph.input],
      'Cast nodes', sum(n.op_type == 'Cast' for n in m.graph.node))
so.optimized_model_filepath = f'{common.WORK}/models/x4fast-fp16-ort-optimized.onnx'
s = ort.InferenceSession(f'{common.ROOT}/models/realesrgan-x4fast-fp16.onnx', so, providers=['CPUExecutionProvider'])
so.optimized_model_filepath = ''
dt = np.float16 if m.graph.input[0].type.tensor_type.elem_type == TensorProto.FLOAT16 else np.float32
s.run(None, {s.get_inputs()[0].name: x.astype(dt)})
o = onnx.load(f'{common.WORK}/models/x4fast-fp16-ort-optimized.onnx')
import collections
print('after ORT optimisation:', dict(collections.Counter(n.op_type for n in o.graph.node)))

# 2) bf16: a single Conv in bfloat16
w = np.random.default_rng(1).standard_normal((8, 3, 3, 3)).astype(np.float32)
g = helper.make_graph([helper.make_node('Conv', ['x', 'w'], ['y'], pads=[1, 1, 1, 1])], 'g',
                      [helper.make_tensor_value_info('x', TensorProto.BFLOAT16, [1, 3, 8, 8])],
                      [helper.make_tensor_value_info('y', TensorProto.BFLOAT16, None)],
                      [helper.make_tensor('w', TensorProto.BFLOAT16, w.shape,
                                          w.astype(ml_dtypes.bfloat16).view(np.uint16).flatten().tolist(), raw=False)])
mb = helper.make_model(g, opset_imports=[helper.make_opsetid('', 22)], ir_version=10)
try:
    ort.InferenceSession(mb.SerializeToString(), providers=['CPUExecutionProvider'])
    print('bf16 Conv: session created')
except Exception as e:
    print('bf16 Conv:', type(e).__name__, str(e)[-300:])
