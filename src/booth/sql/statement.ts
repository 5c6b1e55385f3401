/**
 * A small SQL lexer, enough to refuse statements that would reach outside the shadow and to name the tables a
 * statement mentions. It does not parse SQL: refusals look at keywords and identifiers outside strings and
 * comments (quoted, `U&` escaped and bound through knex's `??` alike: it reads the statement knex sends), and the
 * table set over-approximates (every identifier equal to a table name counts), which only makes the conflict
 * check stricter. It is the first line only: the database itself confines what runs (a PostgreSQL role that can
 * use nothing but the run's shadow, SQLite's compiled program checked before it runs; see the dialects).
 */
import { SqlRefusedError } from './errors';

export type Client = 'sqlite3' | 'pg';
type Token = { t: 'word' | 'ident' | 'punct'; v: string };

export interface AnalyzedStatement {
  kind: 'read' | 'write';
  /** Lower-cased identifiers, any of which may be a table. */
  names: Set<string>;
  /** First keyword, lower-cased (`insert`, `create`, ...). */
  verb: string;
}

/** Internal bookkeeping tables and shadow schemas; a statement naming them could corrupt the staging state. */
export const INTERNAL_PREFIXES = ['_jukebox_', 'jbx_shadow_'];

const READ_ONLY_PRAGMAS = new Set([
  'table_info',
  'table_xinfo',
  'table_list',
  'index_list',
  'index_info',
  'index_xinfo',
  'foreign_key_list',
  'foreign_key_check',
  'integrity_check',
  'quick_check',
  'user_version',
  'schema_version',
  'collation_list',
  'function_list',
]);

const SQLITE_FILE_FUNCTIONS = new Set([
  'load_extension',
  'readfile',
  'writefile',
  'edit',
  'fsdir',
  'sqlite_dbpage',
  'fts3_tokenizer',
]);
const PG_FILE_FUNCTIONS = new Set([
  'pg_read_file',
  'pg_read_binary_file',
  'pg_ls_dir',
  'pg_stat_file',
  'pg_ls_logdir',
  'pg_ls_waldir',
  'pg_ls_tmpdir',
  'lo_import',
  'lo_export',
  'dblink',
  'dblink_exec',
  'dblink_connect',
  'pg_terminate_backend',
  'pg_cancel_backend',
  'pg_reload_conf',
  'set_config',
]);

function tokenize(sql: string, client: Client): Token[] {
  const out: Token[] = [];
  let i = 0;
  const n = sql.length;
  const unterminated = (what: string) =>
    new SqlRefusedError(sql, 'unterminated', `${what} is not closed; close it or remove it`);
  while (i < n) {
    const c = sql[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '-' && sql[i + 1] === '-') {
      while (i < n && sql[i] !== '\n') i++;
    } else if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      if (end < 0) throw unterminated('a /* comment');
      i = end + 2;
    } else if (c === "'" || ((c === 'E' || c === 'e') && sql[i + 1] === "'" && client === 'pg')) {
      const escapes = c !== "'";
      i += escapes ? 2 : 1;
      for (;;) {
        if (i >= n) throw unterminated('a string literal');
        if (escapes && sql[i] === '\\') i += 2;
        else if (sql[i] === "'" && sql[i + 1] === "'") i += 2;
        else if (sql[i] === "'") {
          i++;
          break;
        } else i++;
      }
      out.push({ t: 'punct', v: "'" });
    } else if (c === '$' && client === 'pg' && /^\$[A-Za-z_]*\$/.test(sql.slice(i))) {
      const tag = /^\$[A-Za-z_]*\$/.exec(sql.slice(i))![0];
      const end = sql.indexOf(tag, i + tag.length);
      if (end < 0) throw unterminated(`a ${tag} quoted string`);
      i = end + tag.length;
      out.push({ t: 'punct', v: "'" });
    } else if (
      client === 'pg' &&
      (c === 'U' || c === 'u') &&
      sql[i + 1] === '&' &&
      (sql[i + 2] === '"' || sql[i + 2] === "'")
    ) {
      // U&"d\0061ta" is the identifier "data"; U&'...' a string. Either may name its escape with UESCAPE 'c'.
      const quote = sql[i + 2]!;
      i += 3;
      let raw = '';
      for (;;) {
        if (i >= n) throw unterminated(quote === '"' ? 'a U& quoted identifier' : 'a U& string literal');
        if (sql[i] === quote && sql[i + 1] === quote) {
          raw += quote;
          i += 2;
        } else if (sql[i] === quote) {
          i++;
          break;
        } else raw += sql[i++];
      }
      let esc = '\\';
      const uescape = /^\s*uescape\s*'(.)'/i.exec(sql.slice(i));
      if (uescape) {
        esc = uescape[1]!;
        i += uescape[0].length;
      }
      if (quote === "'") out.push({ t: 'punct', v: "'" });
      else out.push({ t: 'ident', v: decodeUnicodeEscapes(raw, esc, sql).toLowerCase() });
    } else if (c === '"' || c === '`' || (c === '[' && client === 'sqlite3')) {
      const close = c === '[' ? ']' : c;
      let v = '';
      i++;
      for (;;) {
        if (i >= n) throw unterminated('a quoted identifier');
        if (sql[i] === close && sql[i + 1] === close && close !== ']') {
          v += close;
          i += 2;
        } else if (sql[i] === close) {
          i++;
          break;
        } else v += sql[i++];
      }
      out.push({ t: 'ident', v: v.toLowerCase() });
    } else if (/[A-Za-z_\u0080-\uffff]/.test(c)) {
      let j = i + 1;
      while (j < n && /[A-Za-z0-9_$\u0080-\uffff]/.test(sql[j]!)) j++;
      out.push({ t: 'word', v: sql.slice(i, j).toLowerCase() });
      i = j;
    } else if (/[0-9]/.test(c)) {
      while (i < n && /[0-9.eE]/.test(sql[i]!)) i++;
    } else {
      out.push({ t: 'punct', v: c });
      i++;
    }
  }
  return out;
}

/** PostgreSQL's `U&` escapes: `<e>XXXX`, `<e>+XXXXXX` (hex code points) and `<e><e>` for the escape itself. */
function decodeUnicodeEscapes(raw: string, esc: string, sql: string): string {
  let out = '';
  for (let k = 0; k < raw.length; ) {
    if (raw[k] !== esc) {
      out += raw[k++];
      continue;
    }
    if (raw[k + 1] === esc) {
      out += esc;
      k += 2;
      continue;
    }
    const m = /^\+([0-9a-fA-F]{6})|^([0-9a-fA-F]{4})/.exec(raw.slice(k + 1));
    if (!m)
      throw new SqlRefusedError(
        sql,
        'unterminated',
        'a U& identifier holds an invalid escape; write the name plainly',
      );
    out += String.fromCodePoint(Number.parseInt(m[1] ?? m[2]!, 16));
    k += 1 + m[0].length;
  }
  return out;
}

/**
 * Refuses what could escape the shadow or the booth's control of transactions, and classifies the rest.
 * @param schemas schema names that must not be used as qualifiers (pg: every schema but the catalogs).
 */
export function analyze(sql: unknown, client: Client, schemas: ReadonlySet<string>): AnalyzedStatement {
  if (typeof sql !== 'string' || sql.trim() === '')
    throw new SqlRefusedError(String(sql), 'empty', 'pass one non-empty SQL statement as a string');
  if (sql.includes('\0')) throw new SqlRefusedError(sql, 'unterminated', 'NUL bytes are not allowed in SQL');
  const tokens = tokenize(sql, client);
  const refuse = (
    reason: ConstructorParameters<typeof SqlRefusedError>[1],
    detail: string,
    object?: string,
  ) => new SqlRefusedError(sql, reason, detail, object ?? null);
  const semi = tokens.findIndex((t) => t.t === 'punct' && t.v === ';');
  if (semi >= 0 && semi < tokens.length - 1)
    throw refuse('multiple-statements', 'run one statement per query() call');
  const body = semi >= 0 ? tokens.slice(0, semi) : tokens;
  if (body.length === 0) throw refuse('empty', 'the statement is only comments');
  const verb = body[0]!.t === 'word' ? body[0]!.v : '';
  if (
    ['begin', 'commit', 'rollback', 'savepoint', 'release', 'end', 'start', 'abort', 'prepare'].includes(verb)
  )
    throw refuse(
      'transaction-control',
      'the booth owns transactions: each query() is atomic on the shadow and commit() applies them all at once',
    );
  if (client === 'pg' && ['set', 'reset', 'discard'].includes(verb))
    throw refuse(
      'session-setting',
      'session settings (search_path, role) could move statements off the shadow',
    );
  if (client === 'pg' && ['do', 'call', 'copy', 'listen', 'notify', 'load', 'checkpoint'].includes(verb))
    throw refuse(
      verb === 'copy' ? 'file-access' : 'code-execution',
      `${verb.toUpperCase()} can reach files, programs or other sessions outside the shadow`,
    );
  if (['grant', 'revoke'].includes(verb)) throw refuse('privileges', 'privileges are not staged');
  const names = new Set<string>();
  for (let k = 0; k < body.length; k++) {
    const tok = body[k]!;
    if (tok.t === 'punct') continue;
    const v = tok.v;
    const next = body[k + 1];
    if (INTERNAL_PREFIXES.some((p) => v.startsWith(p)))
      throw refuse('internal-table', `${v} belongs to the booth's bookkeeping`, v);
    // Functions are refused however they are spelled: "set_config"(...) calls set_config.
    if (v === 'load_extension') throw refuse('load-extension', 'loading extensions runs native code', v);
    if (client === 'sqlite3' && SQLITE_FILE_FUNCTIONS.has(v))
      throw refuse('file-access', `${v} reads or writes files or pages outside the SQL model`, v);
    if (client === 'pg' && PG_FILE_FUNCTIONS.has(v))
      throw refuse('file-access', `${v} reaches the server's files, settings or other sessions`, v);
    if (tok.t === 'word') {
      if (v === 'attach' || v === 'detach')
        throw refuse('attach', 'ATTACH/DETACH would open another database file outside the shadow');
      if (v === 'vacuum') throw refuse('vacuum', 'VACUUM (and VACUUM INTO a file) is not staged');
      if (v === 'pragma') {
        const name = body[k + 1]?.v === 'main' && body[k + 2]?.v === '.' ? body[k + 3]?.v : body[k + 1]?.v;
        const assigns = body.some((b) => b.t === 'punct' && b.v === '=');
        if (name === undefined || !READ_ONLY_PRAGMAS.has(name) || assigns)
          throw refuse(
            'pragma',
            `PRAGMA ${name ?? ''} can change files or connection settings; only read-only pragmas (${[...READ_ONLY_PRAGMAS].slice(0, 5).join(', ')}, ...) are allowed`,
          );
      }
      if (client === 'pg' && v === 'extension') throw refuse('load-extension', 'extensions run native code');
      if (client === 'pg' && (v === 'language' || v === 'function' || v === 'procedure') && verb === 'create')
        throw refuse('code-execution', 'routines would run outside the shadow later');
      if (v === 'system' && verb === 'alter') throw refuse('privileges', 'ALTER SYSTEM changes the server');
      if (['role', 'user'].includes(v) && ['create', 'alter', 'drop'].includes(verb))
        throw refuse('privileges', 'roles are not staged');
    }
    if (next?.t === 'punct' && next.v === '.' && schemas.has(v))
      throw refuse(
        'schema-qualified',
        `${v}.… names a schema directly; write unqualified table names, statements run in the shadow`,
        v,
      );
    names.add(v);
  }
  const writes = ['insert', 'update', 'delete', 'replace', 'merge', 'create', 'drop', 'alter', 'truncate'];
  let kind: 'read' | 'write';
  if (verb === 'select' || verb === 'values' || verb === 'explain' || verb === 'pragma' || verb === 'show')
    kind = 'read';
  else if (verb === 'with')
    kind = body.some((t) => t.t === 'word' && writes.includes(t.v)) ? 'write' : 'read';
  else kind = 'write';
  // SELECT ... INTO creates a table in pg.
  if (kind === 'read' && client === 'pg' && body.some((t) => t.t === 'word' && t.v === 'into'))
    kind = 'write';
  return { kind, names, verb };
}
