/** Quoting for the SQL the engine writes around the mapping. */
export const ident = (name: string) => `"${name.replace(/"/g, '""')}"`
export const literal = (text: string) => `'${text.replace(/'/g, "''")}'`
