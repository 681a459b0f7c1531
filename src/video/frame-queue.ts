/**
 * The joints between the stages of the video pipeline. A bounded queue makes a fast producer wait
 * (that wait is the backpressure: the decoder's pipe stops being read, so ffmpeg blocks on its
 * write), and `fail` wakes every waiter at once so no stage can stay parked after another one broke.
 * Memory is bounded by the capacities, never by the length of the video.
 */

interface Waiter {
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class BoundedQueue<T> {
  readonly capacity: number;
  readonly #items: T[] = [];
  #closed = false;
  #failure: { error: unknown } | undefined;
  readonly #notFull: Waiter[] = [];
  readonly #notEmpty: Waiter[] = [];

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`Expected queue capacity to be an integer of at least 1 but received ${String(capacity)}`);
    }
    this.capacity = capacity;
  }

  get size(): number {
    return this.#items.length;
  }

  /** Adds an item, waiting while the queue is full. Rejects once the queue failed. */
  async push(item: T): Promise<void> {
    while (this.#items.length >= this.capacity && this.#failure === undefined) {
      await new Promise<void>((resolve, reject) => this.#notFull.push({ resolve, reject }));
    }
    if (this.#failure !== undefined) throw this.#failure.error;
    if (this.#closed) throw new Error('Expected an open queue but push was called after close');
    this.#items.push(item);
    wakeOne(this.#notEmpty);
  }

  /** The next item, waiting while the queue is empty; undefined once it is closed and drained. */
  async shift(): Promise<T | undefined> {
    while (this.#items.length === 0 && !this.#closed && this.#failure === undefined) {
      await new Promise<void>((resolve, reject) => this.#notEmpty.push({ resolve, reject }));
    }
    if (this.#failure !== undefined) throw this.#failure.error;
    const item = this.#items.shift();
    wakeOne(this.#notFull);
    return item;
  }

  /** No more items will come; consumers drain what is left, then get undefined. */
  close(): void {
    this.#closed = true;
    wakeAll(this.#notEmpty);
  }

  /** Stops the queue: every pending and later push/shift rejects with `error`; items are dropped. */
  fail(error: unknown): void {
    if (this.#failure !== undefined) return;
    this.#failure = { error };
    this.#items.length = 0;
    for (const waiter of this.#notFull.splice(0)) waiter.reject(error);
    for (const waiter of this.#notEmpty.splice(0)) waiter.reject(error);
  }
}

/** A counting semaphore with the same failure behaviour, bounding work in flight. */
export class Slots {
  #free: number;
  #failure: { error: unknown } | undefined;
  readonly #waiting: Waiter[] = [];

  constructor(count: number) {
    if (!Number.isInteger(count) || count < 1) {
      throw new RangeError(`Expected slot count to be an integer of at least 1 but received ${String(count)}`);
    }
    this.#free = count;
  }

  async acquire(): Promise<void> {
    while (this.#free === 0 && this.#failure === undefined) {
      await new Promise<void>((resolve, reject) => this.#waiting.push({ resolve, reject }));
    }
    if (this.#failure !== undefined) throw this.#failure.error;
    this.#free -= 1;
  }

  release(): void {
    this.#free += 1;
    wakeOne(this.#waiting);
  }

  fail(error: unknown): void {
    if (this.#failure !== undefined) return;
    this.#failure = { error };
    for (const waiter of this.#waiting.splice(0)) waiter.reject(error);
  }
}

function wakeOne(waiters: Waiter[]): void {
  waiters.shift()?.resolve();
}

function wakeAll(waiters: Waiter[]): void {
  for (const waiter of waiters.splice(0)) waiter.resolve();
}
