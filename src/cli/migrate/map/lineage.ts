/**
 * Which file and column each field of the entry comes from, read from DuckDB's own parse of the
 * mapping's final SELECT (json_serialize_sql), never by parsing SQL by hand. A field is given a
 * source when its value is built from exactly one column of a declared file, through any functions
 * (trim, strptime, casts, the mapping's own macros, a code map's lookup); fields made of several
 * columns or of constants only have none. `json_object` pairs name the fields, a scalar subquery's
 * `list(...)`/`json_group_array(...)` makes a list (`[]` in the path).
 */
import type { DuckDBConnection } from '@duckdb/node-api'
import { literal } from './sql.js'

export interface ColumnSource {
  file: string
  column: string
}

export interface TableColumns {
  table: string
  file: string
  columns: string[]
}

type Node = Record<string, unknown>
type Scope = Array<Map<string, string>>

const LIST_MAKERS = new Set(['list', 'array_agg', 'json_group_array'])
const OBJECT_MAKERS = new Set(['json_object', 'struct_pack'])
const AMBIGUOUS = Symbol('ambiguous')

const isNode = (v: unknown): v is Node => v !== null && typeof v === 'object' && !Array.isArray(v)

/** The join condition that brought in each table of a scope (a code map joined on a column, say). */
const joinedOn = new WeakMap<Map<string, string>, Map<string, Node>>()

/** Table aliases (and names) of a SELECT node's FROM clause → table names. */
function fromScope(from: unknown, into = new Map<string, string>()): Map<string, string> {
  if (!isNode(from)) return into
  if (from.type === 'BASE_TABLE' && typeof from.table_name === 'string') {
    const name = from.table_name.toLowerCase()
    into.set(typeof from.alias === 'string' && from.alias !== '' ? from.alias.toLowerCase() : name, name)
  } else if (from.type === 'JOIN') {
    fromScope(from.left, into)
    const right = from.right
    if (
      isNode(right) &&
      right.type === 'BASE_TABLE' &&
      typeof right.table_name === 'string' &&
      isNode(from.condition)
    ) {
      const alias = typeof right.alias === 'string' && right.alias !== '' ? right.alias : right.table_name
      const conditions = joinedOn.get(into) ?? new Map<string, Node>()
      conditions.set(alias.toLowerCase(), from.condition)
      joinedOn.set(into, conditions)
    }
    fromScope(right, into)
  }
  return into
}

export async function lineageOf(
  connection: DuckDBConnection,
  select: string,
  tables: TableColumns[]
): Promise<Record<string, ColumnSource>> {
  const reader = await connection.runAndReadAll(`SELECT json_serialize_sql(${literal(select)})`)
  const parsed = JSON.parse(String(reader.getRows()[0]?.[0])) as { error?: boolean; statements?: Array<{ node: Node }> }
  const node = parsed.statements?.[0]?.node
  if (parsed.error || !node) return {}
  // The mapping's own macros, to look through them (their parameters replaced by the arguments).
  const macros = new Map<string, { parameters: string[]; body: Node }>()
  const defined = await connection.runAndReadAll(
    "SELECT function_name, parameters, macro_definition FROM duckdb_functions() WHERE function_type = 'macro' AND NOT internal"
  )
  for (const [name, parameters, definition] of defined.getRowsJS()) {
    if (typeof definition !== 'string') continue
    const body = await connection.runAndReadAll(`SELECT json_serialize_sql(${literal(`SELECT ${definition}`)})`)
    const tree = JSON.parse(String(body.getRows()[0]?.[0])) as { statements?: Array<{ node: Node }> }
    const expression = (tree.statements?.[0]?.node.select_list as Node[] | undefined)?.[0]
    if (expression) {
      macros.set(String(name).toLowerCase(), { parameters: (parameters as string[]).map(String), body: expression })
    }
  }
  // The mapping's views (a list built once for all accounts and joined), to look through them.
  const views = new Map<string, Node>()
  const defining = await connection.runAndReadAll('SELECT view_name, sql FROM duckdb_views() WHERE NOT internal')
  for (const [name, text] of defining.getRowsJS()) {
    const query = VIEW_QUERY.exec(String(text))?.[1]
    if (!query) continue
    const tree = JSON.parse(
      String((await connection.runAndReadAll(`SELECT json_serialize_sql(${literal(query)})`)).getRows()[0]?.[0])
    ) as { error?: boolean; statements?: Array<{ node: Node }> }
    const viewNode = tree.statements?.[0]?.node
    if (!tree.error && viewNode?.type === 'SELECT_NODE') views.set(String(name).toLowerCase(), viewNode)
  }
  const byTable = new Map(tables.map((t) => [t.table.toLowerCase(), t]))
  const found = new Map<string, ColumnSource | typeof AMBIGUOUS>()
  const record = (path: string, source: ColumnSource | undefined) => {
    if (!source) return
    const before = found.get(path)
    if (before === undefined) found.set(path, source)
    else if (before === AMBIGUOUS || before.file !== source.file || before.column !== source.column) {
      found.set(path, AMBIGUOUS)
    }
  }

  const resolve = (names: string[], scope: Scope): ColumnSource | undefined => {
    const lower = names.map((n) => n.toLowerCase())
    const column = lower[lower.length - 1]!
    for (let i = scope.length - 1; i >= 0; i--) {
      const aliases = scope[i]!
      const tableName = lower.length >= 2 ? aliases.get(lower[lower.length - 2]!) : undefined
      const candidates = lower.length >= 2 ? (tableName ? [tableName] : []) : [...aliases.values()]
      for (const name of candidates) {
        const table = byTable.get(name)
        const real = table?.columns.find((c) => c.toLowerCase() === column)
        if (table && real) return { file: table.file, column: real }
      }
      if (lower.length >= 2 && tableName) return undefined
    }
    return undefined
  }

  /** A column of one of the mapping's views: the expression the view selects for it, in the view's scope. */
  const viewColumn = (names: string[], scope: Scope): { expression: Node; scope: Scope } | undefined => {
    const lower = names.map((n) => n.toLowerCase())
    const column = lower[lower.length - 1]!
    for (let i = scope.length - 1; i >= 0; i--) {
      const aliases = scope[i]!
      const candidates =
        lower.length >= 2
          ? [aliases.get(lower[lower.length - 2]!)].filter((n) => n !== undefined)
          : [...aliases.values()]
      for (const name of candidates) {
        const view = views.get(name)
        const expression = ((view?.select_list as Node[] | undefined) ?? []).find((item) => {
          const named =
            typeof item.alias === 'string' && item.alias !== ''
              ? item.alias
              : item.class === 'COLUMN_REF'
                ? (item.column_names as string[]).at(-1)
                : undefined
          return named?.toLowerCase() === column
        })
        if (view && expression) return { expression, scope: [fromScope(view.from_table)] }
      }
    }
    return undefined
  }

  /** A macro call with its parameters replaced by the call's arguments. */
  const expand = (call: Node): Node | undefined => {
    const macro = macros.get(String(call.function_name).toLowerCase())
    if (!macro) return undefined
    const args = (call.children as Node[] | undefined) ?? []
    const substitute = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(substitute)
      if (!isNode(value)) return value
      if (value.class === 'COLUMN_REF' && Array.isArray(value.column_names)) {
        const names = value.column_names as string[]
        const k = macro.parameters.indexOf(names[0]!)
        const arg = k >= 0 ? args[k] : undefined
        if (arg && names.length === 1) return arg
        if (arg && arg.class === 'COLUMN_REF') {
          return { ...value, column_names: [...(arg.column_names as string[]), ...names.slice(1)] }
        }
      }
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v)]))
    }
    return substitute(macro.body) as Node
  }

  const following = new Set<Node>()
  /** Every column of declared files an expression reads (subqueries included, with their tables). */
  const columnsIn = (value: unknown, scope: Scope, into: ColumnSource[]): ColumnSource[] => {
    if (Array.isArray(value)) {
      for (const v of value) columnsIn(v, scope, into)
      return into
    }
    if (!isNode(value)) return into
    if (value.class === 'COLUMN_REF' && Array.isArray(value.column_names)) {
      const source = resolve(value.column_names as string[], scope)
      if (source) into.push(source)
      const view = source ? undefined : viewColumn(value.column_names as string[], scope)
      if (view) return columnsIn(view.expression, view.scope, into)
      // A column of a table the mapping made (a code map) comes from what it was joined on.
      const names = value.column_names as string[]
      const alias = names.length >= 2 ? names[names.length - 2]!.toLowerCase() : undefined
      const holder = alias === undefined ? undefined : scope.findLast((aliases) => aliases.has(alias))
      const condition = holder && alias ? joinedOn.get(holder)?.get(alias) : undefined
      if (!source && condition && alias && !byTable.has(holder!.get(alias)!) && !following.has(condition)) {
        following.add(condition)
        columnsIn(condition, scope, into)
        following.delete(condition)
      }
      return into
    }
    if (value.class === 'FUNCTION') {
      const expanded = expand(value)
      if (expanded) return columnsIn(expanded, scope, into)
    }
    if (value.type === 'SELECT_NODE') {
      // What a subquery selects; a lookup (a code map) selects from a table of its own, and the
      // column it is keyed by is in its WHERE.
      const inner = [...scope, fromScope(value.from_table)]
      const selected = columnsIn(value.select_list, inner, [])
      into.push(...(selected.length > 0 ? selected : columnsIn(value.where_clause, inner, [])))
      return into
    }
    for (const v of Object.values(value)) columnsIn(v, scope, into)
    return into
  }

  const visit = (expression: unknown, path: string, scope: Scope): void => {
    if (!isNode(expression)) return
    const cls = expression.class
    if (cls === 'COLUMN_REF' && Array.isArray(expression.column_names)) {
      const view = viewColumn(expression.column_names as string[], scope)
      if (view) return visit(view.expression, path, view.scope)
    }
    if (cls === 'FUNCTION') {
      const name = String(expression.function_name).toLowerCase()
      const children = (expression.children as Node[] | undefined) ?? []
      if (OBJECT_MAKERS.has(name) && name === 'json_object') {
        for (let i = 0; i + 1 < children.length; i += 2) {
          const key = children[i]!
          const keyValue = isNode(key.value) ? key.value.value : undefined
          if (key.class === 'CONSTANT' && typeof keyValue === 'string') {
            visit(children[i + 1], join(path, keyValue), scope)
          }
        }
        return
      }
      if (name === 'struct_pack') {
        for (const child of children) if (typeof child.alias === 'string') visit(child, join(path, child.alias), scope)
        return
      }
      if (LIST_MAKERS.has(name) && children.length === 1) return visit(children[0], `${path}[]`, scope)
      if (name === 'list_value' && children.some((c) => producesStructure(c, 0, scope))) {
        for (const child of children) visit(child, `${path}[]`, scope)
        return
      }
      const expanded = expand(expression)
      if (expanded) return visit(expanded, path, scope)
      // to_json, json and the like pass a made object or list through.
      if (children.length === 1 && producesStructure(children[0], 0, scope)) return visit(children[0], path, scope)
    }
    if (cls === 'SUBQUERY' && isNode(expression.subquery) && isNode(expression.subquery.node)) {
      const inner = expression.subquery.node
      const first = (inner.select_list as Node[] | undefined)?.[0]
      if (
        inner.type === 'SELECT_NODE' &&
        first &&
        producesStructure(first, 0, [...scope, fromScope(inner.from_table)])
      ) {
        return visit(first, path, [...scope, fromScope(inner.from_table)])
      }
    }
    if (cls === 'CASE' && producesStructure(expression, 0, scope)) {
      for (const check of (expression.case_checks as Node[] | undefined) ?? []) visit(check.then_expr, path, scope)
      visit(expression.else_expr, path, scope)
      return
    }
    if (cls === 'CAST' && producesStructure(expression.child, 0, scope)) return visit(expression.child, path, scope)
    const sources = columnsIn(expression, scope, [])
    const distinct = new Map(sources.map((s) => [`${s.file}\u0000${s.column}`, s]))
    if (distinct.size === 1) record(path, [...distinct.values()][0])
    else if (distinct.size > 1) found.set(path, AMBIGUOUS)
  }

  /** Whether an expression builds an object or a list (somewhere down its one-argument chain). */
  const producesStructure = (value: unknown, depth = 0, scope: Scope = []): boolean => {
    if (!isNode(value) || depth > 50) return false
    if (value.class === 'COLUMN_REF' && Array.isArray(value.column_names)) {
      const view = viewColumn(value.column_names as string[], scope)
      return view !== undefined && producesStructure(view.expression, depth + 1, view.scope)
    }
    if (value.class === 'FUNCTION') {
      const name = String(value.function_name).toLowerCase()
      if (OBJECT_MAKERS.has(name) || LIST_MAKERS.has(name)) return true
      if (name === 'list_value') {
        return ((value.children as Node[] | undefined) ?? []).some((c) => producesStructure(c, depth + 1, scope))
      }
      const expanded = expand(value)
      if (expanded) return producesStructure(expanded, depth + 1, scope)
      const children = (value.children as Node[] | undefined) ?? []
      return children.length === 1 && producesStructure(children[0], depth + 1, scope)
    }
    if (value.class === 'SUBQUERY' && isNode(value.subquery) && isNode(value.subquery.node)) {
      const inner = value.subquery.node
      return producesStructure((inner.select_list as Node[] | undefined)?.[0], depth + 1, [
        ...scope,
        fromScope(inner.from_table)
      ])
    }
    if (value.class === 'CASE') {
      return [...((value.case_checks as Node[] | undefined) ?? []).map((c) => c.then_expr), value.else_expr].some((v) =>
        producesStructure(v, depth + 1, scope)
      )
    }
    if (value.class === 'CAST') return producesStructure(value.child, depth + 1, scope)
    return false
  }

  const entry = ((node.select_list as Node[] | undefined) ?? []).find((s) => s.alias === 'entry')
  if (entry) visit(entry, '', [fromScope(node.from_table)])
  const columns: Record<string, ColumnSource> = {}
  for (const [path, source] of [...found.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    if (source !== AMBIGUOUS) columns[path] = source
  }
  return columns
}

/** The query of a `CREATE VIEW … AS <query>` statement, as duckdb_views() keeps it. */
const VIEW_QUERY = /^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP(?:ORARY)?\s+)?VIEW\s+.+?\s+AS\s+([\s\S]*?);?\s*$/i

const join = (path: string, key: string) => (path === '' ? key : `${path}.${key}`)
