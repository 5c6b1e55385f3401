import { execFile } from 'node:child_process';
import type * as TypeScript from 'typescript';
import { OptionalDependencyMissingError, requireOptional } from '../errors/optionalDependency';
import type { CodeShape } from './features';
import { fnv1a, shortHash } from './textKeys';

export interface CodeSnippet {
  lang: 'typescript' | 'python' | 'unknown';
  source: string;
}

const TS_LANGS = new Set(['ts', 'typescript', 'js', 'javascript', 'tsx', 'jsx', 'mjs', 'cjs']);
const PY_LANGS = new Set(['py', 'python', 'python3']);
const FENCE = /```([\w+-]*)[^\n]*\n([\s\S]*?)```/g;
const LOOKS_LIKE_CODE =
  /(\bfunction\b|=>|\bdef\s+\w+\s*\(|\bclass\s+\w+|\breturn\b|\bconst\s+\w+\s*=|\bimport\b)/;

/** Fenced blocks of a message, and tool-argument strings that look like code (e.g. write_file's content). */
export function findCode(
  text: string,
  toolCalls: { arguments: Record<string, unknown> }[] = [],
): CodeSnippet[] {
  const out: CodeSnippet[] = [];
  for (const m of text.matchAll(FENCE)) {
    const tag = (m[1] ?? '').toLowerCase();
    const lang = TS_LANGS.has(tag) ? 'typescript' : PY_LANGS.has(tag) ? 'python' : 'unknown';
    out.push({ lang, source: m[2] ?? '' });
  }
  const visit = (v: unknown) => {
    if (typeof v === 'string') {
      if (v.length >= 20 && LOOKS_LIKE_CODE.test(v)) out.push({ lang: 'unknown', source: v });
    } else if (Array.isArray(v)) v.forEach(visit);
    else if (v && typeof v === 'object') Object.values(v).forEach(visit);
  };
  for (const call of toolCalls) visit(call.arguments);
  return out;
}

/** Turns a normalized token sequence into the shape the code detector compares. */
function shapeOf(lang: CodeShape['lang'], tokens: string[]): CodeShape {
  const grams = new Set<number>();
  for (let i = 0; i + 4 <= tokens.length; i++) grams.add(fnv1a(tokens.slice(i, i + 4).join(' ')));
  if (tokens.length < 4) grams.add(fnv1a(tokens.join(' ')));
  return {
    lang,
    hash: shortHash(`${lang}\n${tokens.join(' ')}`),
    grams: [...grams].sort((a, b) => a - b),
    tokens: tokens.length,
  };
}

/**
 * Parses with the TypeScript compiler and lists the syntax tree in pre-order: node kinds and operator tokens,
 * identifiers renamed by first appearance ($0, $1, ...), every literal reduced to its kind. Formatting and
 * comments are not in the tree. Returns undefined if the text does not parse as TypeScript/JavaScript.
 */
export function typescriptShape(source: string): CodeShape | undefined {
  const ts = typescriptCompiler();
  if (!ts) return lexicalShape(source);
  const file = ts.createSourceFile('snippet.tsx', source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TSX);
  const diagnostics = (file as unknown as { parseDiagnostics?: unknown[] }).parseDiagnostics ?? [];
  if (diagnostics.length || file.statements.length === 0) return undefined;
  const names = new Map<string, string>();
  const tokens: string[] = [];
  const visit = (node: TypeScript.Node) => {
    if (ts.isIdentifier(node) || ts.isPrivateIdentifier(node)) {
      const text = node.text;
      let alias = names.get(text);
      if (!alias) {
        alias = `$${names.size}`;
        names.set(text, alias);
      }
      tokens.push(alias);
      return;
    }
    if (ts.isStringLiteralLike(node) || ts.isTemplateLiteral(node)) return void tokens.push('STR');
    if (ts.isNumericLiteral(node) || ts.isBigIntLiteral(node)) return void tokens.push('NUM');
    tokens.push(ts.SyntaxKind[node.kind]!);
    // Operators are tokens the forEachChild walk skips; they decide what a program does (< vs <=).
    if (ts.isBinaryExpression(node)) {
      visit(node.left);
      tokens.push(ts.SyntaxKind[node.operatorToken.kind]!);
      visit(node.right);
      return;
    }
    if (ts.isPrefixUnaryExpression(node) || ts.isPostfixUnaryExpression(node))
      tokens.push(ts.SyntaxKind[node.operator]!);
    ts.forEachChild(node, visit);
  };
  file.statements.forEach(visit);
  return shapeOf('typescript', tokens);
}

let compiler: typeof TypeScript | null | undefined;

/**
 * The TypeScript compiler is an optional peer (it is large): without it, TypeScript and JavaScript snippets are
 * compared by lexicalShape, which sees the same renamings and literal edits but not the syntax tree.
 */
function typescriptCompiler(): typeof TypeScript | undefined {
  if (compiler === undefined) {
    try {
      compiler = requireOptional<typeof TypeScript>('typescript', "The breaker's code-shape detector");
    } catch (err) {
      if (!(err instanceof OptionalDependencyMissingError)) throw err;
      compiler = null;
    }
  }
  return compiler ?? undefined;
}

const JS_KEYWORDS = new Set(
  (
    'async await break case catch class const continue debugger default delete do else export extends false ' +
    'finally for from function if import in instanceof interface let new null of return static super switch ' +
    'this throw true try type typeof undefined var void while with yield'
  ).split(' '),
);
const LEXEME =
  /\/\/[^\n]*|\/\*[\s\S]*?\*\/|`(?:\\.|[^`\\])*`|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?n?|[A-Za-z_$][\w$]*|===|!==|\*\*=?|=>|\?\?=?|\?\.|&&=?|\|\|=?|<<=?|>>>?=?|[-+*/%&|^<>!=]=?|\+\+|--|[^\s]/g;

/**
 * The shape of TypeScript/JavaScript without its parser: the token stream with comments and formatting gone,
 * identifiers renamed by first appearance and literals reduced to their kind, keywords and operators kept.
 */
export function lexicalShape(source: string): CodeShape | undefined {
  const names = new Map<string, string>();
  const tokens: string[] = [];
  for (const [lexeme] of source.matchAll(LEXEME)) {
    if (lexeme.startsWith('//') || lexeme.startsWith('/*')) continue;
    const first = lexeme[0]!;
    if (first === '"' || first === "'" || first === '`') tokens.push('STR');
    else if (/\d/.test(first)) tokens.push('NUM');
    else if (/[A-Za-z_$]/.test(first) && !JS_KEYWORDS.has(lexeme)) {
      if (!names.has(lexeme)) names.set(lexeme, `$${names.size}`);
      tokens.push(names.get(lexeme)!);
    } else tokens.push(lexeme);
  }
  return tokens.length ? shapeOf('typescript', tokens) : undefined;
}

// Python's own parser (the ast module of the python3 on this machine), run once per batch of snippets.
const PYTHON_SHAPER = `
import ast, json, sys
out = []
for src in json.load(sys.stdin):
    try:
        tree = ast.parse(src)
    except SyntaxError:
        out.append(None); continue
    names, toks = {}, []
    def alias(n):
        if n not in names: names[n] = '$%d' % len(names)
        return names[n]
    for node in ast.walk(tree):
        toks.append(type(node).__name__)
        if isinstance(node, ast.Name): toks.append(alias(node.id))
        elif isinstance(node, ast.arg): toks.append(alias(node.arg))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)): toks.append(alias(node.name))
        elif isinstance(node, ast.Attribute): toks.append(alias(node.attr))
        elif isinstance(node, ast.Constant): toks.append(type(node.value).__name__)
    out.append(toks if tree.body else None)
json.dump(out, sys.stdout)
`;

/** Python shapes of several snippets through one python3 process; undefined for those that do not parse. */
export function pythonShapes(sources: string[], python = 'python3'): Promise<(CodeShape | undefined)[]> {
  if (!sources.length) return Promise.resolve([]);
  return new Promise((resolve, reject) => {
    const child = execFile(
      python,
      ['-c', PYTHON_SHAPER],
      { maxBuffer: 16 * 1024 * 1024, timeout: 10_000 },
      (err, stdout) => {
        if (err) return reject(err);
        try {
          const lists = JSON.parse(stdout) as (string[] | null)[];
          resolve(lists.map((t) => (t ? shapeOf('python', t) : undefined)));
        } catch (parseErr) {
          reject(parseErr);
        }
      },
    );
    child.stdin?.end(JSON.stringify(sources));
  });
}

/**
 * Shapes of every snippet: tagged TypeScript/JavaScript through the TypeScript parser, tagged Python through
 * Python's, untagged ones through TypeScript first and Python if that fails.
 */
export async function codeShapes(snippets: CodeSnippet[], python?: string): Promise<CodeShape[]> {
  const out: CodeShape[] = [];
  const forPython: string[] = [];
  const untagged = new Set<number>();
  for (const s of snippets) {
    if (s.lang === 'python') {
      forPython.push(s.source);
      continue;
    }
    // Without the TypeScript parser nothing fails to parse as TypeScript: an untagged snippet goes to Python first.
    if (s.lang === 'unknown' && !typescriptCompiler()) {
      untagged.add(forPython.length);
      forPython.push(s.source);
      continue;
    }
    const shape = typescriptShape(s.source);
    if (shape) out.push(shape);
    else if (s.lang === 'unknown') forPython.push(s.source);
  }
  const pythonResults = await pythonShapes(forPython, python);
  pythonResults.forEach((shape, i) => {
    if (shape) out.push(shape);
    else if (untagged.has(i) && !typescriptCompiler()) {
      const lexical = lexicalShape(forPython[i]!);
      if (lexical) out.push(lexical);
    }
  });
  return out;
}
