#!/usr/bin/env node
// Loads tsx so the CLI runs from TypeScript sources without a build step.
require('tsx/cjs');
require('./main.ts').main();
