#!/usr/bin/env node
// `jbx` from this repository's TypeScript sources, without a build: tests and scripts run it through tsx.
// The published package runs the compiled dist/cli/jbx.js instead.
require('tsx/cjs');
require('./jbx.ts');
