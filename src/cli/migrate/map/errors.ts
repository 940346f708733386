/**
 * A mapping that cannot run: its header, its SQL, an extract file, a field the batch entry does
 * not have. The message names the file (and line or column) in the person's own terms; the
 * command line prints it without a stack and exits 2.
 */
export class MapError extends Error {
  override name = 'MapError'
}
