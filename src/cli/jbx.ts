#!/usr/bin/env node
/** The `jbx` executable of the built package (dist/cli/jbx.js); from the sources, src/cli/bin.js runs it. */
import { main } from './main';

void main();
