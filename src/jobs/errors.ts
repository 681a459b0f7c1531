/** Temporary: lip-sync still imports the errors from here until its files move (src/errors.ts is the module). */
export * from '../errors.js';
