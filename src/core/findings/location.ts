import { isAbsolute, relative, resolve, sep } from 'node:path';

/**
 * The findings document's path for `given` (relative to the workspace, or absolute), or undefined
 * when it lies outside the workspace: the tool edits the user's campaign document there, and never
 * some other file of the machine that a mistyped path or setting happens to name.
 */
export function findingsPathInWorkspace(workspace: string, given: string): string | undefined {
  const root = resolve(workspace);
  const file = resolve(root, given);
  const rel = relative(root, file);
  if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return undefined;
  return file;
}
