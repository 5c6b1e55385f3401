/**
 * The breaker's held-out evaluation set: a second generator, written apart from conversations.ts and never used
 * to choose a threshold. Other domains (customer support, batch jobs, data notebooks, translation), other
 * vocabularies and templates, other loop kinds; the same EvalConversation shape, so the same scoring runs on it.
 */
import { createHash } from 'node:crypto';
import { type EvalConversation, type EvalTurn, pick, type Rand, rng, shuffle } from './conversations';

export type HeldOutLoopKind =
  | 'apology-spiral'
  | 'status-poll-loop'
  | 'python-rename-churn'
  | 'error-echo'
  | 'retry-storm';

/** The detector each held-out looping kind is meant to be caught by. */
export const HELD_OUT_TARGET_DETECTOR: Record<HeldOutLoopKind, string> = {
  'apology-spiral': 'semantic-repeat',
  'status-poll-loop': 'tool-repeat',
  'python-rename-churn': 'code-repeat',
  'error-echo': 'exact-repeat',
  'retry-storm': 'spend-velocity',
};

const CUSTOMERS = ['Dana', 'Priya', 'Tomás', 'Wen', 'Olu', 'Greta', 'Malik', 'Sofia'];
const PRODUCTS = [
  'the standing desk',
  'the espresso grinder',
  'the winter jacket',
  'the noise-cancelling headphones',
  'the hiking boots',
  'the air purifier',
  'the cast-iron pan',
  'the e-reader',
];
const ISSUES = [
  'arrived with a cracked frame',
  'was charged twice on my card',
  'never left the warehouse according to tracking',
  'came in the wrong colour',
  'stopped working after a week',
  'was delivered to my neighbour',
];
const FIXES = [
  'I have issued a replacement that ships tomorrow',
  'the duplicate charge is reversed and should show in three days',
  'I escalated it to the carrier and booked a pickup',
  'a prepaid return label is in your inbox',
  'I applied a 20 percent credit to your account',
  'the warranty team will call you this afternoon',
];

const usage = (r: Rand, input = 700, output = 100) => ({
  input: Math.round(input * (0.85 + 0.3 * r())),
  output: Math.round(output * (0.85 + 0.3 * r())),
});
const duration = (r: Rand) => Math.round(1800 + 2600 * r());

function supportOpening(r: Rand, n: number): EvalTurn[] {
  const out: EvalTurn[] = [];
  const products = shuffle(r, PRODUCTS);
  const issues = shuffle(r, ISSUES);
  const fixes = shuffle(r, FIXES);
  for (let i = 0; i < n; i++) {
    const customer = i % 2 === 0;
    out.push({
      track: customer ? 'planner' : 'worker',
      text: customer
        ? `Hi, this is ${pick(r, CUSTOMERS)}: ${products[i % products.length]} ${issues[i % issues.length]}.`
        : `Thanks for telling us. For ${products[(i - 1) % products.length]}, ${fixes[i % fixes.length]}.`,
      usage: usage(r),
      durationMs: duration(r),
    });
  }
  return out;
}

// --- looping kinds ------------------------------------------------------------------------------------------------

const APOLOGIES = [
  (p: string) => `I'm sorry, but I can't refund ${p} until the original payment has fully cleared.`,
  (p: string) => `Apologies: the refund for ${p} is blocked while the first payment is still pending.`,
  (p: string) => `Unfortunately a refund on ${p} isn't possible yet, because the payment hasn't settled.`,
  (p: string) => `I regret that ${p} can't be refunded right now; the charge is still being processed.`,
  (p: string) => `Sorry again, the system won't let me refund ${p} before the payment clears.`,
  (p: string) => `I understand the frustration, but ${p} cannot be refunded until that payment goes through.`,
];
const INSISTS = [
  (p: string) => `It has been two weeks. Please just refund ${p} now.`,
  (p: string) => `I really need the money back for ${p}; can you push the refund through?`,
  (p: string) => `Why is the refund for ${p} still not done? Please process it today.`,
  (p: string) => `Can someone finally return my payment for ${p}?`,
  (p: string) => `I am asking once more: refund ${p}, please.`,
  (p: string) => `This is taking forever. I want my refund for ${p}.`,
];

function apologySpiral(r: Rand, i: number): EvalConversation {
  const product = pick(r, PRODUCTS);
  const turns = supportOpening(r, 4);
  const sorry = shuffle(r, APOLOGIES);
  const insist = shuffle(r, INSISTS);
  for (let k = 0; k < 12; k++) {
    const customer = k % 2 === 0;
    turns.push({
      track: customer ? 'planner' : 'worker',
      text: (customer ? insist : sorry)[Math.floor(k / 2) % 6]!(product),
      usage: usage(r),
      durationMs: duration(r),
    });
  }
  return { id: `apology-spiral-${i}`, kind: 'apology-spiral', looping: true, loopStartsAt: 4, turns };
}

function statusPollLoop(r: Rand, i: number): EvalConversation {
  const turns = supportOpening(r, 2);
  const job = `export-${1000 + Math.floor(r() * 9000)}`;
  const args = { job_id: job, include: ['progress', 'errors', 'eta'], verbose: true };
  const notes = [
    'Checking whether the export finished.',
    'Polling the job once more.',
    'Let me see if it is done now.',
    'Still waiting, checking again.',
    'Another status check.',
    'Looking at the job status.',
  ];
  for (let k = 0; k < 6; k++) {
    const shuffled: Record<string, unknown> = {};
    for (const key of shuffle(r, Object.keys(args)))
      shuffled[key] = key === 'include' ? shuffle(r, args.include) : args[key as keyof typeof args];
    turns.push({
      track: 'worker',
      text: notes[k]!,
      toolCalls: [{ name: 'get_job_status', arguments: shuffled }],
      usage: usage(r),
      durationMs: duration(r),
    });
  }
  return { id: `status-poll-loop-${i}`, kind: 'status-poll-loop', looping: true, loopStartsAt: 2, turns };
}

const PY_CHURN: ((n: string[], lit: number) => string)[] = [
  ([f, xs, lo, hi, mid, t], lit) =>
    `def ${f}(${xs}, ${t}):\n    ${lo}, ${hi} = ${lit}, len(${xs}) - 1\n    while ${lo} <= ${hi}:\n        ${mid} = (${lo} + ${hi}) // 2\n        if ${xs}[${mid}] == ${t}:\n            return ${mid}\n        if ${xs}[${mid}] < ${t}:\n            ${lo} = ${mid} + 1\n        else:\n            ${hi} = ${mid} - 1\n    return -1\n`,
  ([f, d, out, k, v, p]) =>
    `def ${f}(${d}, ${p}=""):\n    ${out} = {}\n    for ${k}, ${v} in ${d}.items():\n        if isinstance(${v}, dict):\n            ${out}.update(${f}(${v}, ${p} + ${k} + "."))\n        else:\n            ${out}[${p} + ${k}] = ${v}\n    return ${out}\n`,
  ([f, rows, seen, row, key, out]) =>
    `def ${f}(${rows}):\n    ${seen} = set()\n    ${out} = []\n    for ${row} in ${rows}:\n        ${key} = tuple(sorted(${row}.items()))\n        if ${key} not in ${seen}:\n            ${seen}.add(${key})\n            ${out}.append(${row})\n    return ${out}\n`,
];
const PY_NAMES = [
  ['find', 'items', 'low', 'high', 'middle', 'target'],
  ['locate', 'arr', 'a', 'b', 'm', 'needle'],
  ['search', 'values', 'left', 'right', 'pivot', 'wanted'],
  ['lookup', 'data', 'start', 'end', 'centre', 'goal'],
  ['bsearch', 'seq', 'i', 'j', 'k', 'x'],
  ['seek', 'lst', 'first', 'last', 'half', 'key'],
];
const PY_DISTINCT = [
  'def median(xs):\n    s = sorted(xs)\n    n = len(s)\n    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2\n',
  'def chunks(xs, size):\n    return [xs[i:i + size] for i in range(0, len(xs), size)]\n',
  'def normalize(text):\n    return " ".join(text.lower().split())\n',
  'class LRU:\n    def __init__(self, cap):\n        self.cap = cap\n        self.data = {}\n    def get(self, k):\n        v = self.data.pop(k, None)\n        if v is not None:\n            self.data[k] = v\n        return v\n',
  'def safe_div(a, b):\n    try:\n        return a / b\n    except ZeroDivisionError:\n        return float("nan")\n',
  'def histogram(words):\n    out = {}\n    for w in words:\n        out[len(w)] = out.get(len(w), 0) + 1\n    return out\n',
];

function pythonRenameChurn(r: Rand, i: number): EvalConversation {
  const program = PY_CHURN[i % PY_CHURN.length]!;
  const turns: EvalTurn[] = [];
  const distinct = shuffle(r, PY_DISTINCT);
  for (let k = 0; k < 2; k++) {
    turns.push({
      track: 'planner',
      text: `Notebook cell ${k + 1}: add a utility for the sales data.`,
      usage: usage(r),
      durationMs: duration(r),
    });
    turns.push({
      track: 'worker',
      text: `Added:\n\`\`\`python\n${distinct[k]}\`\`\``,
      usage: usage(r),
      durationMs: duration(r),
    });
  }
  const start = turns.length;
  const names = shuffle(r, PY_NAMES);
  const asks = [
    'Rename things so a reviewer understands it.',
    'Use clearer variable names.',
    'Make this cell more Pythonic.',
    'The names still feel off, try again.',
    'One more pass on readability.',
    'Clean it up further.',
  ];
  for (let k = 0; k < 6; k++) {
    turns.push({ track: 'planner', text: asks[k]!, usage: usage(r), durationMs: duration(r) });
    turns.push({
      track: 'worker',
      text: `Revised cell:\n\`\`\`python\n${program(names[k % names.length]!, Math.floor(r() * 2))}\`\`\``,
      usage: usage(r),
      durationMs: duration(r),
    });
  }
  return {
    id: `python-rename-churn-${i}`,
    kind: 'python-rename-churn',
    looping: true,
    loopStartsAt: start,
    turns,
  };
}

function errorEcho(r: Rand, i: number): EvalConversation {
  const turns = supportOpening(r, 4);
  const path = pick(r, ['/var/data/export.csv', '/srv/reports/q3.xlsx', '/mnt/share/invoices.zip']);
  const echo = [
    `Tool call failed: permission denied on ${path}. Retrying the export now.`,
    `TOOL CALL FAILED - permission denied on ${path}; retrying the export now!`,
    `tool call failed: Permission denied on ${path} ... retrying the export now`,
  ];
  const nudges = ['ok', 'Try once more.', 'Any luck?', 'Keep going.', 'Hm.'];
  for (let k = 0; k < 10; k++)
    turns.push(
      k % 2 === 0
        ? { track: 'worker', text: echo[(k / 2) % 3]!, usage: usage(r), durationMs: duration(r) }
        : { track: 'planner', text: nudges[k % nudges.length]!, usage: usage(r), durationMs: duration(r) },
    );
  return { id: `error-echo-${i}`, kind: 'error-echo', looping: true, loopStartsAt: 4, turns };
}

function retryStorm(r: Rand, i: number): EvalConversation {
  const turns: EvalTurn[] = [];
  const products = shuffle(r, PRODUCTS);
  // Every step resends a context that doubles: a retrieval step stuffing more and more documents in.
  for (let k = 0; k < 18; k++) {
    turns.push({
      track: k % 2 === 0 ? 'planner' : 'worker',
      text: `Retrieval round ${k} for ${products[k % products.length]}: pulled ${4 << Math.min(k, 10)} more documents about returns and ${ISSUES[(k + i) % ISSUES.length]}.`,
      usage: { input: Math.round(Math.min(3000 * 2 ** (k / 2), 400_000)), output: 300 },
      durationMs: duration(r),
    });
  }
  return { id: `retry-storm-${i}`, kind: 'retry-storm', looping: true, loopStartsAt: 0, turns };
}

// --- healthy kinds ------------------------------------------------------------------------------------------------

function supportDesk(r: Rand, i: number): EvalConversation {
  return { id: `support-desk-${i}`, kind: 'support-desk', looping: false, turns: supportOpening(r, 18) };
}

function jobMonitor(r: Rand, i: number): EvalConversation {
  const turns: EvalTurn[] = [
    {
      track: 'planner',
      text: 'Watch the nightly exports and report.',
      usage: usage(r),
      durationMs: duration(r),
    },
  ];
  for (let k = 0; k < 14; k++) {
    const job = `export-${2000 + i * 50 + k}`;
    turns.push({
      track: 'worker',
      text: `Checking ${job}.`,
      toolCalls: [{ name: 'get_job_status', arguments: { job_id: job, include: ['progress'] } }],
      usage: usage(r, 900, 50),
      durationMs: duration(r),
    });
  }
  turns.push({
    track: 'worker',
    text: `All fourteen exports finished; ${i + 1} needed a retry and are green now.`,
    usage: usage(r),
    durationMs: duration(r),
  });
  return { id: `job-monitor-${i}`, kind: 'job-monitor', looping: false, turns };
}

function notebookSession(r: Rand, i: number): EvalConversation {
  const turns: EvalTurn[] = [];
  const cells = shuffle(r, PY_DISTINCT);
  const asks = [
    'Load the data.',
    'Now a helper for the report.',
    'Next cell please.',
    'Another utility.',
    'Add one for the charts.',
    'One for the export.',
    'Last helper.',
  ];
  for (let k = 0; k < 7; k++) {
    turns.push({ track: 'planner', text: asks[k]!, usage: usage(r), durationMs: duration(r) });
    turns.push({
      track: 'worker',
      text: `Cell ${k + 1}:\n\`\`\`python\n${cells[(k + i) % cells.length]}\`\`\``,
      usage: usage(r, 900, 220),
      durationMs: duration(r),
    });
  }
  // The binary search once, then a genuinely different variant (returns the insertion point).
  const once = PY_CHURN[0]!(PY_NAMES[0]!, 0);
  turns.push({
    track: 'worker',
    text: `Search:\n\`\`\`python\n${once}\`\`\``,
    usage: usage(r),
    durationMs: duration(r),
  });
  turns.push({
    track: 'worker',
    text: `Insertion point variant:\n\`\`\`python\n${once.replace('return -1', 'return low')}\`\`\``,
    usage: usage(r),
    durationMs: duration(r),
  });
  return { id: `notebook-session-${i}`, kind: 'notebook-session', looping: false, turns };
}

const REVIEW_POINTS = [
  'the queue should be partitioned by tenant, not by region',
  'we can drop the nightly cron once the event stream is live',
  'the mobile client needs an offline mode before launch',
  'sessions should expire after 30 minutes of inactivity',
  'image uploads belong in object storage with signed URLs',
  'the search index can be rebuilt from the event log',
  'feature flags need an owner and an expiry date',
  'the billing service must be idempotent on retries',
  'dashboards should read from a replica, never the primary',
  'we need a kill switch for the recommendation widget',
];

function designReview(r: Rand, i: number): EvalConversation {
  const points = shuffle(r, REVIEW_POINTS);
  const turns: EvalTurn[] = [];
  for (let k = 0; k < 18; k++) {
    const lead = k % 2 === 0;
    const p = points[Math.floor(k / 2) % points.length]!;
    turns.push({
      track: lead ? 'planner' : 'worker',
      text: lead
        ? `Point ${Math.floor(k / 2) + 1}: I think ${p}. Objections?`
        : `Agreed on point ${Math.floor(k / 2) + 1}, with one caveat from the ${pick(r, ['security', 'platform', 'data', 'mobile'])} side: ${points[(k + i) % points.length]} changes the rollout order.`,
      usage: usage(r, 1200 + 80 * k, 140),
      durationMs: duration(r),
    });
  }
  return { id: `design-review-${i}`, kind: 'design-review', looping: false, turns };
}

const SOURCE = [
  'Le colis est parti de l’entrepôt lundi.',
  'Le transporteur a signalé un retard dû à la neige.',
  'Nous avons proposé un remboursement partiel.',
  'Le client a accepté un bon d’achat à la place.',
  'Le dossier est clos depuis vendredi.',
];
const RENDERINGS = [
  ['The parcel left the warehouse on Monday.', 'The package shipped from the warehouse on Monday.'],
  ['The carrier reported a delay because of snow.', 'The courier flagged a snow-related delay.'],
  ['We offered a partial refund.', 'We proposed refunding part of the price.'],
  ['The customer accepted a voucher instead.', 'The customer took store credit instead.'],
  ['The case has been closed since Friday.', 'The ticket was closed on Friday.'],
];

function iterativeTranslation(r: Rand, i: number): EvalConversation {
  const turns: EvalTurn[] = [];
  const chosen: string[] = [];
  const notes = [
    'Translate the first sentence.',
    'Good, add the next one.',
    'Continue.',
    'Keep going, watch the tense.',
    'And the last one.',
    'Use a friendlier word in sentence two.',
    'Make sentence four less formal.',
    'Final read-through.',
  ];
  for (let k = 0; k < 8; k++) {
    turns.push({ track: 'planner', text: notes[k]!, usage: usage(r), durationMs: duration(r) });
    if (k < SOURCE.length) chosen.push(RENDERINGS[k]![Math.floor(r() * 2)]!);
    else {
      // An edit always changes the draft: the sentence asked about swaps to its other rendering.
      const at = (k * 3 + i) % chosen.length;
      const [a, b] = RENDERINGS[at]!;
      chosen[at] = chosen[at] === a ? b! : a!;
    }
    turns.push({
      track: 'worker',
      text: `Translation so far: ${chosen.join(' ')}`,
      usage: usage(r, 900, 180),
      durationMs: duration(r),
    });
  }
  return { id: `iterative-translation-${i}`, kind: 'iterative-translation', looping: false, turns };
}

/** Five of each kind, seeded apart from the tuning set: 25 looping and 25 healthy conversations. */
export function heldOutSet(seed = 1207): EvalConversation[] {
  const r = rng(seed);
  const out: EvalConversation[] = [];
  for (let i = 0; i < 5; i++)
    out.push(
      apologySpiral(r, i),
      statusPollLoop(r, i),
      pythonRenameChurn(r, i),
      errorEcho(r, i),
      retryStorm(r, i),
    );
  for (let i = 0; i < 5; i++)
    out.push(
      supportDesk(r, i),
      jobMonitor(r, i),
      notebookSession(r, i),
      designReview(r, i),
      iterativeTranslation(r, i),
    );
  return out;
}

/** Sorted keys at every level, so the hash depends on the set's content, not on how the generator built it. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  return value;
}

/**
 * SHA-256 of the held-out set as generated (every conversation, turn, label and usage) and of which detector
 * each loop kind is meant for: the README states it, so any later edit of the set shows.
 */
export function heldOutSetHash(): string {
  const content = JSON.stringify(
    canonical({ conversations: heldOutSet(), targets: HELD_OUT_TARGET_DETECTOR }),
  );
  return createHash('sha256').update(content).digest('hex');
}
