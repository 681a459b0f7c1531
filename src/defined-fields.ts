/**
 * Optional fields as one prepared object: with exactOptionalPropertyTypes an optional field may be
 * absent but not `undefined`, so the fields whose value is undefined are left out rather than spread
 * in one by one. Key order is kept, so what is serialized reads as before.
 */
export type DefinedFields<T> = { [K in keyof T]?: Exclude<T[K], undefined> };

export function definedFields<T extends object>(fields: T): DefinedFields<T> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (value !== undefined) out[key] = value;
  }
  return out as DefinedFields<T>;
}
