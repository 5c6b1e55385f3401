/** SQL identifier quoting shared by both dialects (SQLite and PostgreSQL both accept double quotes). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
