// node:wasi, loaded without its one-time "WASI is an experimental feature"
// warning: the module only uses WASI to start the Go runtime (clocks,
// random seed, stderr), so the warning would only confuse users of a
// hashing library. Any other warning passes through untouched.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

let WASIClass;

export function wasiClass() {
  if (WASIClass) return WASIClass;
  const emit = process.emitWarning;
  process.emitWarning = function (warning, ...rest) {
    const text = typeof warning === 'string' ? warning : warning?.message;
    if (typeof text === 'string' && text.startsWith('WASI is an experimental feature')) return;
    return emit.call(this, warning, ...rest);
  };
  try {
    WASIClass = require('node:wasi').WASI;
  } finally {
    process.emitWarning = emit;
  }
  return WASIClass;
}
