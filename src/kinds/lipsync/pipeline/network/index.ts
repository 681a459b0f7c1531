/**
 * The lip-sync network: Wav2Lip's ONNX contract, manifests and loading (wav2lip-model.ts; the
 * generated test model, and the generator the model registry makes it with: wav2lip-test-model.ts), the network on its own worker thread
 * (model-thread.ts), and face crops to and from its tensors (face-tensor.ts). Depends on the audio
 * room (the mel parameters) and the faces room (BlazeFace's calling-thread session helper).
 */
export * from './face-tensor.js';
export * from './model-thread.js';
export * from './wav2lip-model.js';
export * from './wav2lip-test-model.js';
