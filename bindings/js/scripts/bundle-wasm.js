// npm pack's prepack / postpack step: copies the kvhash WebAssembly module
// into the package directory, where the loader looks first
// (defaultWasmPath), so that the packed tarball is self-contained; then
// removes the copy, so that the repository's own tests keep reading the
// freshly built build/kvhash.wasm.
//
//   node scripts/bundle-wasm.js           copy $KVHASH_WASM or ../../build/kvhash.wasm
//   node scripts/bundle-wasm.js --remove  delete the copy
import { copyFileSync, existsSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const target = fileURLToPath(new URL('../kvhash.wasm', import.meta.url));

if (process.argv.includes('--remove')) {
  rmSync(target, { force: true });
} else {
  const source = process.env.KVHASH_WASM || fileURLToPath(new URL('../../../build/kvhash.wasm', import.meta.url));
  if (!existsSync(source)) {
    console.error(`kvhash: no WASM module at ${source} to bundle: run \`make build/kvhash.wasm\` in the repository first (or set KVHASH_WASM)`);
    process.exit(1);
  }
  copyFileSync(source, target);
}
