/**
 * The files `jbx init` writes: a runnable project in the shape of Temporal's samples (agent, tools, workflows,
 * worker, client) with Jukebox added to its worker as a plugin, a model script so it runs with no API key, and a
 * vitest test that replays the recorded run offline.
 */

export interface ProjectTemplate {
  /** Relative path to file contents. */
  files: Record<string, string>;
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
}

const AGENT = `/**
 * The agent: a plain async function of a context. It runs as a Temporal workflow, so it only orchestrates:
 * every model call (ctx.llm, here inside runToolLoop) and tool call (ctx.tool) is an activity, recorded on a tape.
 */
import { defineAgent, runToolLoop, type ToolSpec } from 'jukebox/workflow';

export const weatherToolSpecs: ToolSpec[] = [
  {
    name: 'get_weather',
    description: "Today's weather in a city.",
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
];

export interface WeatherInput {
  city: string;
}

export const weatherAgent = defineAgent<WeatherInput, { answer: string }>('weatherAgent', async (ctx, input) => {
  const result = await runToolLoop(ctx, {
    provider: 'openai',
    model: 'gpt-4o-mini',
    system: 'You help people dress for the weather. Look the weather up with the tool; never guess it.',
    messages: [{ role: 'user', content: \`What should I wear in \${input.city} today?\` }],
    tools: weatherToolSpecs,
    maxTurns: 4,
  });
  return { answer: result.text };
});
`;

const TOOLS = `/** The tools' implementations: they run in activities on the worker, where I/O belongs. */
import { requireString, type ToolDefinition } from 'jukebox';
import { weatherToolSpecs } from './agent';

// A table instead of a weather service, so the project runs offline; replace it with a real API call.
const WEATHER: Record<string, string> = {
  paris: '14°C, light rain',
  lisbon: '22°C, sunny',
  oslo: '-3°C, snow',
};

export const tools: ToolDefinition[] = [
  {
    spec: weatherToolSpecs[0]!,
    async run(args) {
      const city = requireString('get_weather', args, 'city');
      return WEATHER[city.toLowerCase()] ?? \`no weather report for \${city}\`;
    },
  },
];
`;

const WORKFLOWS = `/** The workflows this project's worker runs: deterministic orchestration only (no I/O, no Node modules). */
import { agentWorkflow } from 'jukebox/workflow';
import { weatherAgent as weatherAgentDefinition } from './agent';

export const weatherAgent = agentWorkflow(weatherAgentDefinition);
`;

const WORKER = `/**
 * A Temporal worker with Jukebox added as a plugin: \`npm run worker\`. With OPENAI_API_KEY set, the agent talks to
 * the real API; without one, to a local scripted model server (model-script.yaml) started here. Ctrl-C stops it.
 */
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import {
  connectTemporalWorker,
  DEFAULT_TASK_QUEUE,
  endpointsFromEnv,
  JukeboxError,
  JukeboxPlugin,
  type LlmEndpoints,
  localEndpoints,
  temporalConfigFromEnv,
} from 'jukebox';
import { startModelServer } from 'jukebox/testing';
import { tools } from './tools';

/** The model endpoints, and what to close when the worker stops (the local model server, if one started). */
async function modelEndpoints(): Promise<{ endpoints: LlmEndpoints; close(): Promise<void> }> {
  const fromEnv = endpointsFromEnv();
  if (fromEnv.openai) return { endpoints: fromEnv, close: async () => {} };
  const server = await startModelServer({ script: path.join(__dirname, '../model-script.yaml') });
  console.log(\`no OPENAI_API_KEY: the agent talks to the local model server on \${server.url}\`);
  return { endpoints: localEndpoints(server.url), close: () => server.close() };
}

async function run() {
  const temporal = temporalConfigFromEnv();
  const connection = await connectTemporalWorker(temporal);
  const model = await modelEndpoints();
  try {
    const worker = await Worker.create({
      connection,
      namespace: temporal.namespace,
      taskQueue: process.env.JUKEBOX_TASK_QUEUE ?? DEFAULT_TASK_QUEUE,
      workflowsPath: require.resolve('./workflows'),
      plugins: [new JukeboxPlugin({ tools, endpoints: model.endpoints })],
    });
    console.log(\`worker ready on task queue \${worker.options.taskQueue} (Ctrl-C stops it)\`);
    // Ctrl-C (SIGINT) or SIGTERM makes run() return once the worker has shut down.
    await worker.run();
  } finally {
    // The model server's socket would keep the process alive after the worker stopped.
    await model.close();
    await connection.close();
  }
}

run().catch((err) => {
  console.error(err instanceof JukeboxError ? \`\${err.code}: \${err.message}\` : err);
  process.exit(1);
});
`;

const CLIENT = `/**
 * Starts the agent and prints its steps as they finish: \`npm start [CITY]\`. While no worker polls the task
 * queue, it says so and keeps waiting.
 */
import {
  connectTemporal,
  DEFAULT_TASK_QUEUE,
  JukeboxError,
  printStep,
  startAgent,
  temporalConfigFromEnv,
  waitWithProgress,
} from 'jukebox';

async function run() {
  const temporal = temporalConfigFromEnv();
  // A typed error naming the address, the namespace and what to run when the server is not there.
  const connection = await connectTemporal(temporal);
  try {
    const handle = await startAgent(
      'weatherAgent',
      { city: process.argv[2] ?? 'Paris' },
      {
        connection,
        namespace: temporal.namespace,
        taskQueue: process.env.JUKEBOX_TASK_QUEUE ?? DEFAULT_TASK_QUEUE,
      },
    );
    console.log(\`started \${handle.workflowId}\`);
    const result = await waitWithProgress<{ answer: string }>(handle, printStep);
    console.log(\`answer: \${result.output.answer}\`);
  } finally {
    await connection.close();
  }
}

run().catch((err) => {
  console.error(err instanceof JukeboxError ? \`\${err.code}: \${err.message}\` : err);
  process.exit(1);
});
`;

const TEST = `/**
 * Replays the newest recorded run of the agent offline: every model and tool answer comes from its tape, so this
 * needs no Temporal server, no model API and no key, and fails when a change to the agent makes it diverge.
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { replayTape } from 'jukebox/testing';
import { expect, it } from 'vitest';
import { weatherAgent } from '../src/agent';

const TAPES = path.resolve(process.env.JUKEBOX_TAPE_DIR ?? path.join(__dirname, '../.jukebox/tapes'));

function newestTape(): string | undefined {
  let names: string[] = [];
  try {
    names = readdirSync(TAPES).filter((n) => n.startsWith('weatherAgent') && n.endsWith('.jbx'));
  } catch {}
  const files = names.map((n) => path.join(TAPES, n));
  return files.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
}

it('replays the recorded run offline, step for step', async () => {
  const tape = newestTape();
  expect(tape, \`no weatherAgent tape in \${TAPES}: record one first (npm run worker, then npm start)\`).toBeDefined();
  const report = await replayTape(tape!, { agent: weatherAgent });
  expect(report.divergence).toBeNull();
  expect(report.status).toBe('match');
});
`;

const MODEL_SCRIPT = `# What the local model server answers when no OPENAI_API_KEY is set (the same agent code talks to the real
# API with a key). The first turn whose match holds answers, in every run (repeat): once the tool has answered,
# the advice; before that, the tool call.
name: weather
turns:
  - id: advise
    match: { toolResult: "°C" }
    repeat: true
    reply:
      text: "Paris is 14°C with light rain today: wear a warm layer and take a raincoat."
  - id: look-up
    match: { lastUser: "What should I wear" }
    repeat: true
    reply:
      text: "Let me look up today's weather."
      toolCalls: [{ name: get_weather, arguments: { city: "Paris" } }]
`;

const README = (name: string) => `# ${name}

An AI agent on [Temporal](https://temporal.io) with [Jukebox](https://www.npmjs.com/package/jukebox): every
model and tool call is a durable step, recorded on a replayable \`.jbx\` tape.

\`\`\`sh
npm install
temporal server start-dev --namespace jukebox   # any Temporal server; JUKEBOX_TEMPORAL_ADDRESS points elsewhere
npm run worker                                  # in one terminal
npm start Paris                                 # in another: runs the agent, prints its steps
npx jbx ls                                      # the recorded run
npx jbx replay <tape>                           # replays it offline
npm test                                        # the same, as a test
\`\`\`

- \`src/agent.ts\`: the agent (workflow code: it imports \`jukebox/workflow\` only);
- \`src/tools.ts\`: its tool, run as an activity;
- \`src/workflows.ts\`, \`src/worker.ts\`, \`src/client.ts\`: the Temporal parts, with \`new JukeboxPlugin({ tools })\`;
- \`model-script.yaml\`: the local model server's answers, used when OPENAI_API_KEY is not set;
- \`jukebox.config.json\`: where \`jbx replay\` and \`jbx fork\` find the agent code.
`;

export function projectTemplate(name: string, versions: Record<string, string>): ProjectTemplate {
  const v = (pkg: string) => {
    const version = versions[pkg];
    if (!version) throw new Error(`jbx init: no version of ${pkg} is known to this jukebox package`);
    return version;
  };
  return {
    files: {
      'src/agent.ts': AGENT,
      'src/tools.ts': TOOLS,
      'src/workflows.ts': WORKFLOWS,
      'src/worker.ts': WORKER,
      'src/client.ts': CLIENT,
      'test/agent.test.ts': TEST,
      'model-script.yaml': MODEL_SCRIPT,
      'jukebox.config.json': `${JSON.stringify({ agents: ['src/agent.ts'], workflows: 'src/workflows.ts' }, null, 2)}\n`,
      'tsconfig.json': `${JSON.stringify(
        {
          compilerOptions: {
            target: 'ES2022',
            module: 'node16',
            moduleResolution: 'node16',
            strict: true,
            esModuleInterop: true,
            skipLibCheck: true,
            noEmit: true,
          },
          include: ['src', 'test'],
        },
        null,
        2,
      )}\n`,
      '.gitignore': 'node_modules/\n.jukebox/\n',
      'README.md': README(name),
    },
    scripts: { worker: 'tsx src/worker.ts', start: 'tsx src/client.ts', test: 'vitest run' },
    dependencies: {
      jukebox: v('jukebox'),
      '@temporalio/client': v('@temporalio/client'),
      '@temporalio/worker': v('@temporalio/worker'),
      '@temporalio/workflow': v('@temporalio/workflow'),
      // One copy for every @temporalio package: without it at the top of node_modules, npm nests one under each
      // (the top holds @grpc/proto-loader's 7.x) and Temporal's external storage cannot encode a payload reference.
      protobufjs: v('protobufjs'),
    },
    devDependencies: {
      tsx: v('tsx'),
      typescript: v('typescript'),
      vitest: v('vitest'),
      '@types/node': v('@types/node'),
    },
  };
}
