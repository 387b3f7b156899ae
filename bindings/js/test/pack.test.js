// `npm pack` makes a self-contained package (issue 10, item 21): the
// tarball bundles kvhash.wasm, installs into a project outside the
// repository without a network (it has no dependencies), and hashes there
// with no KVHASH_WASM set.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { PUBLIC, modulePath } from './helpers.js';

const packageDir = dirname(dirname(fileURLToPath(import.meta.url)));
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function run(cmd, args, cwd, env) {
  return execFileSync(cmd, args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
}

test('npm pack bundles kvhash.wasm and the package hashes where it is installed', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'kvhash-pack-'));
  try {
    // npm's own cache and logs stay in the scratch directory.
    const env = { ...process.env, npm_config_cache: join(scratch, 'npm-cache'), KVHASH_WASM: modulePath() };
    run(npm, ['pack', '--silent', '--pack-destination', scratch], packageDir, env);
    const tarballs = readdirSync(scratch).filter((f) => f.endsWith('.tgz'));
    assert.equal(tarballs.length, 1, `npm pack wrote ${tarballs}`);
    assert.ok(!existsSync(join(packageDir, 'kvhash.wasm')), 'postpack removes the bundled copy from the source tree');

    const listing = run('tar', ['-tzf', join(scratch, tarballs[0])], scratch, env);
    assert.match(listing, /^package\/kvhash\.wasm$/m);
    assert.doesNotMatch(listing, /^package\/test\//m, 'tests are not shipped');

    const project = join(scratch, 'project');
    run('mkdir', ['-p', project], scratch, env);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
    run(npm, ['install', '--offline', '--no-audit', '--no-fund', '--silent', join(scratch, tarballs[0])], project, env);
    writeFileSync(join(project, 'main.js'), [
      "import { blockHashes, defaultWasmPath } from '@kvhash/wasm';",
      "console.log(JSON.stringify({ path: defaultWasmPath(), blocks: Array.from(blockHashes([1,2,3,4,5,6,7,8,9,10,11,12], 4), String) }));",
    ].join('\n'));
    const { KVHASH_WASM: _, ...bare } = env;
    const out = JSON.parse(run(process.execPath, ['main.js'], project, bare));
    assert.equal(out.path, join(project, 'node_modules', '@kvhash', 'wasm', 'kvhash.wasm'));
    assert.deepEqual(out.blocks, PUBLIC.blocks.map(String));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});
