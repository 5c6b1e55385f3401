/**
 * SQLite's side of confinement, decided by SQLite itself. The drivers knex uses (sqlite3, better-sqlite3) expose
 * no `sqlite3_set_authorizer`, so the booth asks SQLite for what the authorizer would have been told: the program
 * a statement compiles to (`EXPLAIN`), with every name already resolved by SQLite, however it was spelled (quoted,
 * bound through `??`, through a view, a trigger or a foreign-key action). Before a statement runs, its program and
 * every trigger program it would fire may open no b-tree of the booth's own tables (found by root page in the
 * compiled schema) and no database but `main` and `temp`, and call no function that reaches files or native code.
 * Only the booth's own row-tracking triggers (TEMP, named `_jukebox_*`) may write its tables. A statement that
 * changes the schema is checked again after it ran, inside its transaction: the booth's objects unchanged, no new
 * object named like them, no TEMP object but the booth's. A refusal throws before anything commits.
 *
 * Together with what SQLite enforces on its own on the agent's connection (ATTACH limited to 0 databases, and
 * every statement inside a transaction, where ATTACH, DETACH and VACUUM cannot run), the agent's statements
 * cannot read or write the booth's tables.
 */
import type { Db } from './dialect';
import { SqlRefusedError } from './errors';

interface Op {
  addr: number;
  opcode: string;
  p1: number;
  p2: number;
  p3: number;
  p4: string | null;
  p5: number;
}

export interface SchemaRow {
  db: 'main' | 'temp';
  type: string;
  name: string;
  tbl_name: string;
  sql: string | null;
}

const INTERNAL = '_jukebox_';
const isInternal = (name: string | null | undefined) =>
  typeof name === 'string' && name.toLowerCase().startsWith(INTERNAL);

/** OpenWrite's P5 flag saying P2 is a register holding the root page (a b-tree the same program created). */
const OPFLAG_P2ISREG = 0x10;
/** Opcodes that only run when a statement changes a schema. */
const SCHEMA_OPS = new Set([
  'SetCookie',
  'ParseSchema',
  'DropTable',
  'DropIndex',
  'DropTrigger',
  'CreateBtree',
]);
/** Functions that reach the file system or load native code (most are not compiled in; refused if they are). */
const REFUSED_FUNCTIONS = new Set([
  'load_extension',
  'readfile',
  'writefile',
  'edit',
  'fsdir',
  'fts3_tokenizer',
]);

/** Where a b-tree a program addresses lives: [root page or null when it is a register, database index]. */
function btreeOf(op: Op): [number | null, number] | null {
  switch (op.opcode) {
    case 'OpenRead':
    case 'OpenWrite':
    case 'ReopenIdx':
      return [op.p5 & OPFLAG_P2ISREG ? null : op.p2, op.p3];
    case 'Clear':
      return [op.p1, op.p2];
    case 'Destroy':
      return [op.p1, op.p3];
    default:
      return null;
  }
}

/**
 * Compiles `sql` (EXPLAIN) and refuses it if its program reaches past the shadow. Returns the schema as it was
 * when the statement changes it, for `afterRun`; null otherwise.
 */
export async function checkCompiled(db: Db, sql: string, bindings: unknown): Promise<SchemaRow[] | null> {
  // EXPLAIN only compiles (EXPLAIN EXPLAIN is no statement): nothing of it runs.
  if (/^(?:\s|--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/)*explain\b/i.test(sql)) return null;
  const ops = (await db.raw(`EXPLAIN ${sql}`, bindings as never)) as Op[];
  // Read in the same transaction, after the compile: the root pages this very program addresses. (Not cached
  // by schema cookie: a rolled-back schema change can bring a cookie back with other root pages.)
  const roots = ops.some((op) => btreeOf(op) !== null) ? await rootsOf(db) : new Map<number, string>();
  let program: string | null = null;
  let schemaChange = false;
  ops.forEach((op, i) => {
    if (i > 0 && op.addr === 0) program = /^-- TRIGGER (.+)$/.exec(op.p4 ?? '')?.[1] ?? '';
    if (SCHEMA_OPS.has(op.opcode) || (op.opcode === 'OpenWrite' && op.p2 === 1)) schemaChange = true;
    // The booth's own TEMP tracking triggers write its tables; nothing else may touch them.
    if (program !== null && isInternal(program)) return;
    const tree = btreeOf(op);
    if (tree !== null) {
      const [root, dbIndex] = tree;
      if (dbIndex >= 2)
        throw new SqlRefusedError(
          sql,
          'outside-shadow',
          `it would open database number ${dbIndex}, outside the shadow`,
          `database ${dbIndex}`,
        );
      const owner = dbIndex === 0 && root !== null ? roots.get(root) : undefined;
      if (owner !== undefined)
        throw new SqlRefusedError(
          sql,
          'internal-table',
          `SQLite compiled it to ${op.opcode.startsWith('Open') ? 'open' : 'empty'} ${owner}, which belongs to the booth's bookkeeping${program ? ` (through trigger ${program})` : ''}`,
          owner,
        );
    }
    if ((op.opcode === 'Function' || op.opcode === 'PureFunc') && op.p4 !== null) {
      const name = op.p4.replace(/\(.*$/, '').toLowerCase();
      if (REFUSED_FUNCTIONS.has(name))
        throw new SqlRefusedError(sql, 'file-access', `${name} reaches files or native code`, name);
    }
  });
  return schemaChange ? schemaOf(db) : null;
}

/** After a schema change ran (its transaction still open): the booth's objects are as they were. */
export async function checkSchemaAfter(db: Db, sql: string, before: SchemaRow[]): Promise<void> {
  const after = await schemaOf(db);
  const key = (r: SchemaRow) => `${r.db}\0${r.type}\0${r.name}`;
  const was = new Map(before.map((r) => [key(r), r]));
  const now = new Map(after.map((r) => [key(r), r]));
  const mainTables = new Set(after.filter((r) => r.db === 'main' && r.type === 'table').map((r) => r.name));
  for (const r of after) {
    const old = was.get(key(r));
    if (r.db === 'temp' && old === undefined)
      throw new SqlRefusedError(
        sql,
        'temporary-object',
        `TEMP ${r.type} ${r.name} would live on the booth's connection, not in the staged database; create it without TEMP`,
        r.name,
      );
    if (r.db === 'main' && (isInternal(r.name) || isInternal(r.tbl_name))) {
      if (old === undefined || old.sql !== r.sql || old.tbl_name !== r.tbl_name)
        throw new SqlRefusedError(
          sql,
          'internal-table',
          `${r.name} belongs to the booth's bookkeeping`,
          r.name,
        );
    }
  }
  for (const r of before) {
    if (now.has(key(r))) continue;
    // A tracking trigger goes away with its table (DROP TABLE); anything else of the booth's must stay.
    const droppedWithTable = r.db === 'temp' && r.type === 'trigger' && !mainTables.has(r.tbl_name);
    if ((isInternal(r.name) || isInternal(r.tbl_name)) && !droppedWithTable)
      throw new SqlRefusedError(
        sql,
        'internal-table',
        `${r.name} belongs to the booth's bookkeeping`,
        r.name,
      );
  }
}

/** Root page → the booth table it belongs to (its own b-tree or one of its indexes). */
async function rootsOf(db: Db): Promise<Map<number, string>> {
  const rows = (await db.raw(
    'SELECT rootpage, tbl_name FROM main.sqlite_master WHERE rootpage > 0 AND (substr(lower(name), 1, 9) = ? OR substr(lower(tbl_name), 1, 9) = ?)',
    [INTERNAL, INTERNAL],
  )) as { rootpage: number; tbl_name: string }[];
  return new Map(rows.map((r) => [Number(r.rootpage), r.tbl_name]));
}

async function schemaOf(db: Db): Promise<SchemaRow[]> {
  return (await db.raw(
    "SELECT 'main' AS db, type, name, tbl_name, sql FROM main.sqlite_master UNION ALL SELECT 'temp', type, name, tbl_name, sql FROM temp.sqlite_master",
  )) as SchemaRow[];
}
