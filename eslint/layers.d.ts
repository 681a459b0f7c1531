/** Types of eslint/layers.js, for the tests that read the layers table (test/lint-boundaries.test.ts). */
export function layersOf(markdown: string, rooms?: readonly string[]): string[][];
export function roomsOf(srcDir: string): string[];
export function repositoryLayers(root: string): string[][];
