import { activeFecKernel } from '../../src/fec/reed-solomon.js';

/** Whether the Reed-Solomon code runs on its WebAssembly SIMD kernel here. */
export function simdKernelAvailable(): boolean {
  return activeFecKernel() === 'simd';
}
