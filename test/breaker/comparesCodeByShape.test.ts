import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { codeShapes, findCode, pythonShapes, typescriptShape } from '../../src/breaker';

// Words a generated identifier must not be: keywords, and the type name the program uses.
const RESERVED = new Set(
  'do if in of as is for let new try var any case else enum null this true void with type async await break catch class const false super throw while yield delete export import return switch typeof number default extends finally continue debugger function instanceof'.split(
    ' ',
  ),
);

const SUM =
  'function sum(xs: number[]) {\n  let total = 0;\n  for (const x of xs) total += x;\n  return total;\n}';

describe('code is compared by its syntax tree, names, literals and layout normalized', () => {
  it('treats renamed, reformatted, re-commented TypeScript with other literals as the same program', () => {
    const a = typescriptShape(SUM)!;
    const b = typescriptShape(
      '// add them up\nfunction addAll(values: number[]) { let acc = 10; for (const v of values) { acc += v; } return acc; }',
    );
    expect(b?.hash).not.toBe(a.hash); // braces around the loop body add a Block node: a real tree difference
    const c = typescriptShape(
      '/* v2 */ function addAll(values: number[]) {\n\n let acc = 10\n for (const v of values) acc += v\n return acc }',
    )!;
    expect(c.hash).toBe(a.hash);
  });

  it('tells a real change (one operator) from a cosmetic one', () => {
    expect(typescriptShape(SUM.replace('+=', '-='))!.hash).not.toBe(typescriptShape(SUM)!.hash);
    expect(typescriptShape(SUM.replace('return total', 'return total + 1'))!.hash).not.toBe(
      typescriptShape(SUM)!.hash,
    );
  });

  it('refuses text that does not parse as code', () => {
    expect(typescriptShape('this is prose, not ( code')).toBeUndefined();
  });

  it('parses Python with Python’s own ast module', async () => {
    const [a, b, c, broken] = await pythonShapes([
      'def total(xs):\n    acc = 0\n    for x in xs:\n        acc += x\n    return acc\n',
      'def add_all(values):\n    # sum\n    s = 100\n    for v in values:\n        s += v\n    return s\n',
      'def total(xs):\n    acc = 0\n    for x in xs:\n        acc -= x\n    return acc\n',
      'def broken(:\n',
    ]);
    expect(a!.lang).toBe('python');
    expect(b!.hash).toBe(a!.hash);
    expect(c!.hash).not.toBe(a!.hash);
    expect(broken).toBeUndefined();
  });

  it('finds code in fenced blocks and in tool arguments', async () => {
    const text = `Here:\n\`\`\`ts\n${SUM}\n\`\`\`\nand\n\`\`\`python\ndef f(a):\n    return a\n\`\`\``;
    const found = findCode(text, [{ arguments: { path: 'x.ts', content: SUM } }]);
    expect(found.map((s) => s.lang)).toEqual(['typescript', 'python', 'unknown']);
    const shapes = await codeShapes(found);
    expect(shapes.map((s) => s.lang).sort()).toEqual(['python', 'typescript', 'typescript']);
    expect(shapes.filter((s) => s.lang === 'typescript').map((s) => s.hash)).toEqual([
      typescriptShape(SUM)!.hash,
      typescriptShape(SUM)!.hash,
    ]);
  });
});

describe('code shape, property-based', () => {
  const ident = fc.stringMatching(/^[a-z][a-zA-Z0-9]{0,8}$/).filter((s) => !RESERVED.has(s));
  const program = (f: string, xs: string, acc: string, x: string, lit: number, sep: string) =>
    `function ${f}(${xs}: number[]) {${sep}let ${acc} = ${lit};${sep}for (const ${x} of ${xs}) ${acc} += ${x};${sep}return ${acc};${sep}}`;

  it('any renaming, literal and spacing gives the same hash', () => {
    const base = typescriptShape(program('sum', 'xs', 'total', 'x', 0, '\n'))!.hash;
    fc.assert(
      fc.property(
        fc.uniqueArray(ident, { minLength: 4, maxLength: 4 }),
        fc.integer({ min: 0, max: 10_000 }),
        fc.constantFrom('\n', ' ', '\n\n    ', '\t'),
        ([f, xs, acc, x], lit, sep) => typescriptShape(program(f!, xs!, acc!, x!, lit, sep))!.hash === base,
      ),
      { numRuns: 200 },
    );
  });
});
