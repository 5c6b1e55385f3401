/** The Markdown files the package ships: README.md and those package.json `files` names (folders by their `.md`). */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

export function shippedDocs(root: string): string[] {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { files: string[] };
  const out = new Set(['README.md']);
  for (const entry of pkg.files) {
    if (entry.startsWith('!')) continue;
    const p = path.join(root, entry);
    if (!existsSync(p)) continue;
    if (statSync(p).isDirectory()) {
      for (const n of readdirSync(p)) if (n.endsWith('.md')) out.add(path.posix.join(entry, n));
    } else if (entry.endsWith('.md')) out.add(entry);
  }
  return [...out].sort();
}
