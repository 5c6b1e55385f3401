/**
 * The breaker's evaluation set, generated: looping conversations of five kinds and healthy long ones of five
 * kinds, each a list of agent turns with scripted usage and duration. Deterministic (seeded), so the
 * precision/recall figures in the README are reproducible and a test can hold them.
 */

export type LoopKind =
  | 'exact-loop'
  | 'paraphrase-ping-pong'
  | 'cosmetic-code-rewrite'
  | 'shuffled-tool-call'
  | 'spend-creep';
export type HealthyKind =
  | 'converging-refinement'
  | 'paginated-tools'
  | 'coding-session'
  | 'long-discussion'
  | 'restated-final-code';

export interface EvalTurn {
  track: 'planner' | 'worker';
  text: string;
  toolCalls?: { name: string; arguments: Record<string, unknown> }[];
  usage: { input: number; output: number };
  /** How long the step would take against a real API; the evaluation's clock advances by it. */
  durationMs: number;
}

export interface EvalConversation {
  id: string;
  /** A LoopKind or HealthyKind here, a held-out kind in heldOut.ts. */
  kind: string;
  looping: boolean;
  /** Index of the first turn of the loop: a trip before it is a false alarm. */
  loopStartsAt?: number;
  turns: EvalTurn[];
}

export function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type Rand = ReturnType<typeof rng>;
export const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
export const shuffle = <T>(r: Rand, xs: readonly T[]): T[] => {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
};

const TOPICS = [
  'the quarterly revenue report',
  'the database migration plan',
  'the onboarding checklist',
  'the incident postmortem',
  'the API rate limits',
  'the caching strategy',
  'the release notes',
  'the test coverage gaps',
  'the hiring pipeline',
  'the cloud bill',
  'the search ranking change',
  'the mobile crash rate',
  'the data retention policy',
  'the accessibility audit',
  'the pricing page copy',
  'the backup schedule',
  'the feature flag cleanup',
  'the logging format',
  'the vendor contract',
  'the load test results',
  'the security review',
  'the CI pipeline',
];

const FACTS = [
  'latency went from 120 ms to 340 ms after the deploy',
  'three customers reported missing invoices',
  'the cache hit rate dropped to 61 percent',
  'the nightly job overlaps with the backup window',
  'two endpoints still accept unauthenticated calls',
  'the staging database is 40 GB larger than production',
  'error budgets were exhausted on day 19',
  'the retry policy doubles traffic during outages',
  'the new index cut query time by a factor of four',
  'half of the flags have not changed in a year',
  'the Android build takes 22 minutes',
  'the contract renews automatically in March',
  'the p99 of checkout is dominated by fraud scoring',
  'log volume grew 3x since September',
];

const ACTIONS = [
  'open a ticket for it',
  'add an alert on it',
  'write it into the summary',
  'ask the owning team',
  'schedule a fix for next sprint',
  'add a regression test',
  'put it in the risk register',
  'measure it again tomorrow',
];

// Paraphrase ping-pong: each side keeps restating one request / one reply in new words.
const ASK_FORMS = [
  (t: string) => `Could you please double-check ${t} once more before we continue?`,
  (t: string) => `Would you mind verifying ${t} again, just to be sure, before moving on?`,
  (t: string) => `Before we go further, can you re-check ${t} one more time?`,
  (t: string) => `Please look over ${t} again so we are certain it is right before continuing.`,
  (t: string) => `I'd like you to confirm ${t} once again before we proceed, please.`,
  (t: string) => `Can you go back and verify ${t} a second time before we carry on?`,
];
const REPLY_FORMS = [
  (t: string) => `I have checked ${t} again and it looks correct to me, nothing to change.`,
  (t: string) => `I re-checked ${t} and everything appears right; I see nothing to fix.`,
  (t: string) => `I went over ${t} once more and it seems fine, no changes needed.`,
  (t: string) => `Verified ${t} again: it looks correct and I would not change anything.`,
  (t: string) => `Looked at ${t} another time and it appears to be correct, nothing to alter.`,
  (t: string) => `I double-checked ${t} and it seems right to me; there is nothing to change.`,
];

const usage = (r: Rand, input = 800, output = 120) => ({
  input: Math.round(input * (0.8 + 0.4 * r())),
  output: Math.round(output * (0.8 + 0.4 * r())),
});
const duration = (r: Rand) => Math.round(2500 + 2000 * r());

/** A healthy opening: distinct, fact-bearing exchanges, so a loop starts after a real beginning. */
function warmup(r: Rand, n: number, topic: string): EvalTurn[] {
  const out: EvalTurn[] = [];
  const facts = shuffle(r, FACTS);
  for (let i = 0; i < n; i++) {
    const planner = i % 2 === 0;
    const fact = facts[i % facts.length]!;
    out.push({
      track: planner ? 'planner' : 'worker',
      text: planner
        ? `Next point on ${topic}: ${fact}. What should we do about it?`
        : `On that one I would ${pick(r, ACTIONS)}, since ${fact} affects ${pick(r, TOPICS)}.`,
      usage: usage(r),
      durationMs: duration(r),
    });
  }
  return out;
}

// --- code: the same programs in cosmetically different spellings, and genuinely different programs ---------------

const TS_PROGRAMS: ((n: string[], lit: number) => string)[] = [
  ([f, xs, acc, x], lit) =>
    `function ${f}(${xs}: number[]): number {\n  let ${acc} = ${lit};\n  for (const ${x} of ${xs}) {\n    ${acc} += ${x};\n  }\n  return ${acc};\n}`,
  ([f, s, out, i], lit) =>
    `export function ${f}(${s}: string) { const ${out}: string[] = []; for (let ${i} = ${lit}; ${i} < ${s}.length; ${i}++) { if (${s}[${i}] !== ' ') ${out}.push(${s}[${i}]); } return ${out}.join(''); }`,
  ([f, items, seen, item]) =>
    `const ${f} = (${items}: string[]) => {\n    const ${seen} = new Set<string>();\n    return ${items}.filter((${item}) => {\n        if (${seen}.has(${item})) return false;\n        ${seen}.add(${item});\n        return true;\n    });\n};`,
  ([f, a, b, t], lit) =>
    `function ${f}(${a}: number, ${b}: number): number {\n  while (${b} !== ${lit}) {\n    const ${t} = ${b};\n    ${b} = ${a} % ${b};\n    ${a} = ${t};\n  }\n  return ${a};\n}`,
];

const PY_PROGRAMS: ((n: string[], lit: number) => string)[] = [
  ([f, xs, acc, x], lit) =>
    `def ${f}(${xs}):\n    ${acc} = ${lit}\n    for ${x} in ${xs}:\n        ${acc} += ${x}\n    return ${acc}\n`,
  ([f, words, counts, w]) =>
    `def ${f}(${words}):\n    ${counts} = {}\n    for ${w} in ${words}:\n        ${counts}[${w}] = ${counts}.get(${w}, 0) + 1\n    return ${counts}\n`,
];

const NAME_SETS = [
  ['total', 'values', 'sum', 'value'],
  ['accumulate', 'nums', 'acc', 'n'],
  ['addAll', 'list', 'running', 'item'],
  ['compute', 'input', 'result', 'el'],
  ['reduceSum', 'arr', 'total', 'v'],
  ['sumUp', 'data', 'agg', 'd'],
];

const DISTINCT_TS = [
  'function clamp(x: number, lo: number, hi: number) { return Math.min(hi, Math.max(lo, x)); }',
  'export async function retry<T>(fn: () => Promise<T>, times: number): Promise<T> {\n  let last: unknown;\n  for (let i = 0; i < times; i++) {\n    try { return await fn(); } catch (e) { last = e; }\n  }\n  throw last;\n}',
  'export function chunk<T>(xs: T[], size: number): T[][] {\n  const out: T[][] = [];\n  for (let i = 0; i < xs.length; i += size) out.push(xs.slice(i, i + size));\n  return out;\n}',
  'class Counter {\n  private n = 0;\n  inc() { this.n++; return this; }\n  get value() { return this.n; }\n}',
  'export const debounce = (fn: () => void, ms: number) => { let t: ReturnType<typeof setTimeout> | undefined; return () => { if (t) clearTimeout(t); t = setTimeout(fn, ms); }; };',
  'function parseQuery(q: string): Record<string, string> {\n  const out: Record<string, string> = {};\n  for (const part of q.split("&")) {\n    const [k, v = ""] = part.split("=");\n    if (k) out[decodeURIComponent(k)] = decodeURIComponent(v);\n  }\n  return out;\n}',
  'export function isLeapYear(y: number) { return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0; }',
  'export function zip<A, B>(a: A[], b: B[]): [A, B][] { return a.slice(0, Math.min(a.length, b.length)).map((x, i) => [x, b[i]!]); }',
];

const DISTINCT_PY = [
  'def mean(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n',
  'def flatten(rows):\n    return [x for row in rows for x in row]\n',
  'class Stack:\n    def __init__(self):\n        self.items = []\n    def push(self, x):\n        self.items.append(x)\n    def pop(self):\n        return self.items.pop()\n',
  'def read_lines(path):\n    with open(path) as f:\n        return [line.rstrip("\\n") for line in f]\n',
];

const fence = (lang: string, code: string) => `\`\`\`${lang}\n${code}\n\`\`\``;

// --- the generators -----------------------------------------------------------------------------------------------

function exactLoop(r: Rand, i: number): EvalConversation {
  const topic = pick(r, TOPICS);
  const turns = warmup(r, 6, topic);
  const stuck = `I cannot open ${topic} from here; please attach the file so I can continue.`;
  const nudge = [
    `Please continue with ${topic}.`,
    `Go on with ${topic}, the file should be there.`,
    `Try ${topic} again.`,
  ];
  for (let k = 0; k < 10; k++)
    turns.push(
      k % 2 === 0
        ? { track: 'worker', text: stuck, usage: usage(r), durationMs: duration(r) }
        : { track: 'planner', text: nudge[k % 3]!, usage: usage(r), durationMs: duration(r) },
    );
  return { id: `exact-loop-${i}`, kind: 'exact-loop', looping: true, loopStartsAt: 6, turns };
}

function paraphrasePingPong(r: Rand, i: number): EvalConversation {
  const topic = pick(r, TOPICS);
  const turns = warmup(r, 6, topic);
  const asks = shuffle(r, ASK_FORMS);
  const replies = shuffle(r, REPLY_FORMS);
  for (let k = 0; k < 12; k++) {
    const planner = k % 2 === 0;
    const form = planner ? asks[(k / 2) % asks.length]! : replies[Math.floor(k / 2) % replies.length]!;
    turns.push({
      track: planner ? 'planner' : 'worker',
      text: form(topic),
      usage: usage(r),
      durationMs: duration(r),
    });
  }
  return {
    id: `paraphrase-ping-pong-${i}`,
    kind: 'paraphrase-ping-pong',
    looping: true,
    loopStartsAt: 6,
    turns,
  };
}

function cosmeticCodeRewrite(r: Rand, i: number): EvalConversation {
  const python = i % 2 === 1;
  const programs = python ? PY_PROGRAMS : TS_PROGRAMS;
  const program = programs[i % programs.length]!;
  const turns: EvalTurn[] = [];
  const distinct = shuffle(r, python ? DISTINCT_PY : DISTINCT_TS);
  for (let k = 0; k < 2; k++) {
    turns.push({
      track: 'planner',
      text: `Write the helper number ${k + 1} for ${pick(r, TOPICS)}.`,
      usage: usage(r),
      durationMs: duration(r),
    });
    turns.push({
      track: 'worker',
      text: `Here it is:\n${fence(python ? 'python' : 'ts', distinct[k]!)}`,
      usage: usage(r),
      durationMs: duration(r),
    });
  }
  const start = turns.length;
  const names = shuffle(r, NAME_SETS);
  const asks = [
    'Make it cleaner.',
    'Can you improve the naming?',
    'Refactor it to be more readable.',
    'Polish it a bit more.',
    'Tidy this up please.',
    'Make it more idiomatic.',
  ];
  for (let k = 0; k < 6; k++) {
    turns.push({ track: 'planner', text: asks[k]!, usage: usage(r), durationMs: duration(r) });
    const code = program(names[k % names.length]!, Math.floor(r() * 3));
    // Some rewrites are shipped through a write_file tool call instead of a fenced block.
    turns.push(
      k % 3 === 2
        ? {
            track: 'worker',
            text: 'Updated the file.',
            toolCalls: [
              { name: 'write_file', arguments: { path: python ? 'helper.py' : 'helper.ts', content: code } },
            ],
            usage: usage(r),
            durationMs: duration(r),
          }
        : {
            track: 'worker',
            text: `Cleaner version:\n${fence(python ? 'py' : 'typescript', code)}`,
            usage: usage(r),
            durationMs: duration(r),
          },
    );
  }
  return {
    id: `cosmetic-code-rewrite-${i}`,
    kind: 'cosmetic-code-rewrite',
    looping: true,
    loopStartsAt: start,
    turns,
  };
}

function shuffledToolCall(r: Rand, i: number): EvalConversation {
  const topic = pick(r, TOPICS);
  const turns = warmup(r, 4, topic);
  const args = { query: topic, limit: 20, filters: ['open', 'p1', 'backend'], sort: 'updated' };
  const notes = [
    `Searching for ${topic}.`,
    'Let me look that up.',
    'Checking the tracker once more.',
    'One more search to be sure.',
    'Searching again with the filters.',
    'Looking it up.',
  ];
  for (let k = 0; k < 6; k++) {
    const keys = shuffle(r, Object.keys(args));
    const shuffled: Record<string, unknown> = {};
    for (const key of keys)
      shuffled[key] = key === 'filters' ? shuffle(r, args.filters) : args[key as keyof typeof args];
    turns.push({
      track: 'worker',
      text: notes[k]!,
      toolCalls: [{ name: 'search_issues', arguments: shuffled }],
      usage: usage(r),
      durationMs: duration(r),
    });
  }
  return { id: `shuffled-tool-call-${i}`, kind: 'shuffled-tool-call', looping: true, loopStartsAt: 4, turns };
}

function spendCreep(r: Rand, i: number): EvalConversation {
  const topic = pick(r, TOPICS);
  const turns: EvalTurn[] = [];
  const facts = shuffle(r, FACTS);
  // A runaway chain: every step drags the whole growing context along, no message repeats.
  for (let k = 0; k < 24; k++) {
    const planner = k % 2 === 0;
    turns.push({
      track: planner ? 'planner' : 'worker',
      text: planner
        ? `Expanding analysis ${k} of ${topic}: consider how ${facts[k % facts.length]} interacts with ${TOPICS[(k * 7 + i) % TOPICS.length]}.`
        : `Analysis ${k}: it ties ${TOPICS[(k * 5 + i) % TOPICS.length]} to ${facts[(k + 3) % facts.length]}; I will expand on ${ACTIONS[k % ACTIONS.length]} next.`,
      usage: { input: 6000 + k * (9000 + 1000 * i), output: 700 },
      durationMs: duration(r),
    });
  }
  return { id: `spend-creep-${i}`, kind: 'spend-creep', looping: true, loopStartsAt: 0, turns };
}

function convergingRefinement(r: Rand, i: number): EvalConversation {
  const topic = pick(r, TOPICS);
  const sentences = shuffle(r, FACTS)
    .slice(0, 6)
    .map((f) => `We found that ${f}.`);
  const feedback = [
    'Add the finding about the cache.',
    'Mention the owners.',
    'Shorten the second sentence.',
    'Add a recommendation at the end.',
    'Fix the tone of the opening.',
    'Include the timeline.',
    'Looks close; add one number.',
    'Final pass: good.',
  ];
  const turns: EvalTurn[] = [];
  let draft = `Summary of ${topic}. ${sentences[0]}`;
  for (let k = 0; k < 9; k++) {
    turns.push({
      track: 'planner',
      text: k === 0 ? `Draft a summary of ${topic}.` : feedback[(k - 1 + i) % feedback.length]!,
      usage: usage(r),
      durationMs: duration(r),
    });
    // Each draft keeps what was agreed and adds or changes one part: similar to the last, converging.
    if (k > 0)
      draft =
        k < sentences.length
          ? `${draft} ${sentences[k]}`
          : `${draft} Recommendation ${k}: ${pick(r, ACTIONS)}.`;
    turns.push({
      track: 'worker',
      text: `Draft ${k + 1}:\n${draft}`,
      usage: usage(r, 900, 200),
      durationMs: duration(r),
    });
  }
  return { id: `converging-refinement-${i}`, kind: 'converging-refinement', looping: false, turns };
}

function paginatedTools(r: Rand, i: number): EvalConversation {
  const topic = pick(r, TOPICS);
  const turns: EvalTurn[] = [
    {
      track: 'planner',
      text: `List every open issue about ${topic}.`,
      usage: usage(r),
      durationMs: duration(r),
    },
  ];
  for (let page = 1; page <= 14; page++)
    turns.push({
      track: 'worker',
      text: `Fetching page ${page} of the issues about ${topic}.`,
      toolCalls: [{ name: 'list_issues', arguments: { query: topic, page, perPage: 50, state: 'open' } }],
      usage: usage(r, 1200 + 60 * page, 60),
      durationMs: duration(r),
    });
  turns.push({
    track: 'worker',
    text: `There are ${200 + i * 37} open issues about ${topic}; the top themes are listed above.`,
    usage: usage(r),
    durationMs: duration(r),
  });
  return { id: `paginated-tools-${i}`, kind: 'paginated-tools', looping: false, turns };
}

function codingSession(r: Rand, i: number): EvalConversation {
  const turns: EvalTurn[] = [];
  const ts = shuffle(r, DISTINCT_TS);
  const py = shuffle(r, DISTINCT_PY);
  const programs = [...ts.map((c) => fence('ts', c)), ...py.map((c) => fence('python', c))];
  for (let k = 0; k < 9; k++) {
    turns.push({
      track: 'planner',
      text: `Task ${k + 1}: write the next helper for ${TOPICS[(k + i) % TOPICS.length]}.`,
      usage: usage(r),
      durationMs: duration(r),
    });
    turns.push({
      track: 'worker',
      text: `Done with task ${k + 1}:\n${programs[(k + i) % programs.length]}`,
      usage: usage(r, 1000, 250),
      durationMs: duration(r),
    });
  }
  // A genuine bug fix: same program, one operator changed. Not a repeat.
  const fixed = TS_PROGRAMS[0]!(['total', 'values', 'sum', 'value'], 0).replace('+=', '-=');
  turns.push({
    track: 'worker',
    text: `Fixed the sign bug:\n${fence('ts', fixed)}`,
    usage: usage(r),
    durationMs: duration(r),
  });
  return { id: `coding-session-${i}`, kind: 'coding-session', looping: false, turns };
}

function longDiscussion(r: Rand, i: number): EvalConversation {
  const topics = shuffle(r, TOPICS);
  const facts = shuffle(r, FACTS);
  const turns: EvalTurn[] = [];
  for (let k = 0; k < 20; k++) {
    const planner = k % 2 === 0;
    const topic = topics[(k + i) % topics.length]!;
    turns.push({
      track: planner ? 'planner' : 'worker',
      text: planner
        ? `Moving on to ${topic}. Given that ${facts[k % facts.length]}, what is your view?`
        : `For ${topic}, I would ${ACTIONS[(k + i) % ACTIONS.length]}; the risk is that ${facts[(k + 5) % facts.length]}.`,
      usage: usage(r, 1500 + 100 * k, 150),
      durationMs: duration(r),
    });
  }
  return { id: `long-discussion-${i}`, kind: 'long-discussion', looping: false, turns };
}

function restatedFinalCode(r: Rand, i: number): EvalConversation {
  const python = i % 2 === 0;
  const code = python ? DISTINCT_PY[i % DISTINCT_PY.length]! : DISTINCT_TS[i % DISTINCT_TS.length]!;
  const other = shuffle(r, python ? DISTINCT_PY : DISTINCT_TS).filter((c) => c !== code);
  const lang = python ? 'python' : 'ts';
  const turns: EvalTurn[] = [];
  for (let k = 0; k < 3; k++) {
    turns.push({
      track: 'planner',
      text: `Write helper ${k + 1} for ${pick(r, TOPICS)}.`,
      usage: usage(r),
      durationMs: duration(r),
    });
    turns.push({
      track: 'worker',
      text: `Helper ${k + 1}:\n${fence(lang, other[k % other.length]!)}`,
      usage: usage(r),
      durationMs: duration(r),
    });
  }
  turns.push({ track: 'planner', text: 'Now the main one.', usage: usage(r), durationMs: duration(r) });
  turns.push({
    track: 'worker',
    text: `Main helper:\n${fence(lang, code)}`,
    usage: usage(r),
    durationMs: duration(r),
  });
  for (let k = 0; k < 5; k++) {
    const topic = TOPICS[(k + i * 3) % TOPICS.length]!;
    turns.push({
      track: 'planner',
      text: `How does this interact with ${topic}?`,
      usage: usage(r),
      durationMs: duration(r),
    });
    turns.push({
      track: 'worker',
      text: `It only touches ${topic} through ${pick(r, FACTS)}, so I would ${pick(r, ACTIONS)}.`,
      usage: usage(r),
      durationMs: duration(r),
    });
  }
  // Legitimately shown again once, in the final summary.
  turns.push({
    track: 'worker',
    text: `Summary. Final code, unchanged:\n${fence(lang, code)}\nDONE`,
    usage: usage(r),
    durationMs: duration(r),
  });
  return { id: `restated-final-code-${i}`, kind: 'restated-final-code', looping: false, turns };
}

/** Five of each kind: 25 looping and 25 healthy conversations. */
export function evaluationSet(seed = 6): EvalConversation[] {
  const r = rng(seed);
  const out: EvalConversation[] = [];
  for (let i = 0; i < 5; i++)
    out.push(
      exactLoop(r, i),
      paraphrasePingPong(r, i),
      cosmeticCodeRewrite(r, i),
      shuffledToolCall(r, i),
      spendCreep(r, i),
    );
  for (let i = 0; i < 5; i++)
    out.push(
      convergingRefinement(r, i),
      paginatedTools(r, i),
      codingSession(r, i),
      longDiscussion(r, i),
      restatedFinalCode(r, i),
    );
  return out;
}

/** The detectors each looping kind is meant to be caught by (for per-detector recall). */
export const TARGET_DETECTOR: Record<string, string> = {
  'exact-loop': 'exact-repeat',
  'paraphrase-ping-pong': 'semantic-repeat',
  'cosmetic-code-rewrite': 'code-repeat',
  'shuffled-tool-call': 'tool-repeat',
  'spend-creep': 'spend-velocity',
};
