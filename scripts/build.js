#!/usr/bin/env node
// `npm run build`: the package's JavaScript and declarations in dist/ (tsc over src/ alone), plus the files
// the compiled code reads at run time (the viewer's web assets). A clean build each time, so no file of a
// deleted source survives into the published package.
const { execFileSync } = require('node:child_process');
const { cpSync, rmSync } = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const dist = path.join(root, 'dist');
rmSync(dist, { recursive: true, force: true });
execFileSync(
  process.execPath,
  [require.resolve('typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json')],
  {
    stdio: 'inherit',
  },
);
cpSync(path.join(root, 'src/cli/viewer/web'), path.join(dist, 'cli/viewer/web'), { recursive: true });
