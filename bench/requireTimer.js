// Preloaded (`node -r bench/requireTimer.js dist/cli/jbx.js ...`) by the cli suite to say where a jbx
// process's time goes: Node's own start-up until this file runs, the time spent inside top-level module loads
// (every require reached from the CLI, nested ones included once), the modules loaded, and the process's time
// at exit. Writes one JSON line to the file named by JBX_BENCH_STARTUP_OUT.
const Module = require('node:module');
const { writeFileSync } = require('node:fs');

const bootMs = performance.now();
const load = Module._load;
let depth = 0;
let requireMs = 0;
Module._load = function timedLoad(...args) {
  // The entry module itself (isMain) is the CLI running, not a load: its requires are the top-level ones.
  if (args[2] === true) return load.apply(this, args);
  if (depth++ > 0) {
    try {
      return load.apply(this, args);
    } finally {
      depth--;
    }
  }
  const t0 = performance.now();
  try {
    return load.apply(this, args);
  } finally {
    depth--;
    requireMs += performance.now() - t0;
  }
};
process.on('exit', () => {
  const out = process.env.JBX_BENCH_STARTUP_OUT;
  if (!out) return;
  const modules = Object.keys(require.cache).length;
  writeFileSync(out, `${JSON.stringify({ bootMs, requireMs, modules, exitMs: performance.now() })}\n`);
});
