import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { requireString, ToolArgumentsError, type ToolDefinition } from '../../src/agent/tools/toolRegistry';
import { researchToolSpecs } from './agent';

const FACTS_FILE = path.join(__dirname, 'facts.json');

function spec(name: string) {
  const found = researchToolSpecs.find((s) => s.name === name);
  if (!found) throw new Error(`researchToolSpecs lacks ${name}`);
  return found;
}

export const lookupFactTool: ToolDefinition = {
  spec: spec('lookup_fact'),
  async run(args) {
    const topic = requireString('lookup_fact', args, 'topic');
    const facts = JSON.parse(await readFile(FACTS_FILE, 'utf8')) as Record<string, string>;
    return facts[topic.toLowerCase()] ?? `No fact is recorded for ${topic}.`;
  },
};

export const calculateTool: ToolDefinition = {
  spec: spec('calculate'),
  async run(args) {
    const expression = requireString('calculate', args, 'expression');
    return String(evaluateArithmetic(expression));
  },
};

/** A tiny recursive-descent evaluator: `eval` on model output would be an injection hole. */
export function evaluateArithmetic(expression: string): number {
  const tokens = expression.match(/\d+(?:\.\d+)?|[-+*/()]|\S/g) ?? [];
  let pos = 0;
  const fail = (why: string): never => {
    throw new ToolArgumentsError('calculate', `cannot evaluate ${JSON.stringify(expression)}: ${why}`);
  };
  const primary = (): number => {
    const t = tokens[pos++];
    if (t === undefined) return fail('unexpected end');
    if (t === '(') {
      const v = sum();
      if (tokens[pos++] !== ')') fail('missing )');
      return v;
    }
    if (t === '-') return -primary();
    const n = Number(t);
    return Number.isFinite(n) ? n : fail(`unexpected ${t}`);
  };
  const product = (): number => {
    let v = primary();
    while (tokens[pos] === '*' || tokens[pos] === '/')
      v = tokens[pos++] === '*' ? v * primary() : v / primary();
    return v;
  };
  const sum = (): number => {
    let v = product();
    while (tokens[pos] === '+' || tokens[pos] === '-')
      v = tokens[pos++] === '+' ? v + product() : v - product();
    return v;
  };
  const value = sum();
  if (pos !== tokens.length) fail(`unexpected ${tokens[pos]}`);
  return value;
}

export const researchTools: ToolDefinition[] = [lookupFactTool, calculateTool];
