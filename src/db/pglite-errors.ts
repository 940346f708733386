/** WebAssembly's (WASI's) numbers of the file errors a data folder meets, as PGlite's file system throws them. */
const FILE_ERRORS: Record<number, string> = {
  2: 'permission denied (EACCES)',
  20: 'a file exists there (EEXIST)',
  31: 'is a folder (EISDIR)',
  44: 'no such file or folder (ENOENT)',
  51: 'no space left on the device (ENOSPC)',
  54: 'a file is where a folder should be (ENOTDIR)',
  63: 'operation not permitted (EPERM)',
  69: 'read-only file system (EROFS)'
}

/** An error's message; PGlite's file system throws objects with only a WASI error number. */
export function pgliteErrorMessage(err: unknown): string {
  const { message, errno } = (err ?? {}) as { message?: unknown; errno?: unknown }
  if (typeof message === 'string') return message
  if (typeof errno === 'number') return FILE_ERRORS[errno] ?? `file error ${errno}`
  return String(err)
}
