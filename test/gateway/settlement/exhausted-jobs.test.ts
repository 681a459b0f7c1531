import { describe, expect, it } from 'vitest';
import { deliveriesExhaustedError } from '../../../src/gateway/settlement/exhausted-jobs.js';

describe('the failure of a job whose deliveries ran out', () => {
  it("carries its kind's failure code and the number of deliveries; a job of no known kind is INTERNAL_ERROR", () => {
    expect(deliveriesExhaustedError('video', 5).toJSON()).toEqual({
      code: 'UPSCALE_FAILED',
      status: 500,
      message: 'No worker finished the job in 5 deliveries',
    });
    expect(deliveriesExhaustedError('music', 2).code).toBe('GENERATION_FAILED');
    expect(deliveriesExhaustedError(undefined, 2).code).toBe('INTERNAL_ERROR');
  });
});
