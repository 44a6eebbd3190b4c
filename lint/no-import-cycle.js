// @ts-check
/**
 * ESLint rule: no import cycle among the project's own modules. Reads each file's relative imports (static `import`
 * and `export … from`, types included) and reports an import of this file that leads back to it. The well-known
 * rule for this (eslint-plugin-import-x's no-cycle) pulls a native resolver with per-platform binaries whose install
 * npm here does not keep in its lock file; the project's imports are all relative `.ts` paths, which this reads
 * without resolving anything.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

const RELATIVE_IMPORT = /^\s*(?:import|export)\s[^;]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/gm;
/** @type {Map<string, string[]>} */
const importsOf = new Map();

/** @param {string} file */
function relativeImports(file) {
  let found = importsOf.get(file);
  if (!found) {
    /** @type {string} */
    let text;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      text = ''; // a path that is not a file: no imports
    }
    found = [...text.matchAll(RELATIVE_IMPORT)].map((m) => resolve(dirname(file), m[1] ?? ''));
    importsOf.set(file, found);
  }
  return found;
}

/** A path of imports from `start` back to `target`, or undefined. @param {string} start @param {string} target */
function pathBack(start, target) {
  /** @type {Set<string>} */
  const seen = new Set();
  /** @type {{ file: string, path: string[] }[]} */
  const stack = [{ file: start, path: [start] }];
  while (stack.length > 0) {
    const { file, path } = stack.pop();
    if (file === target) return path;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const next of relativeImports(file)) stack.push({ file: next, path: [...path, next] });
  }
  return undefined;
}

export default {
  meta: { type: 'problem', docs: { description: 'no import cycle among the project modules' }, schema: [] },
  /** @param {import('eslint').Rule.RuleContext} context */
  create(context) {
    const file = context.filename;
    importsOf.delete(file); // read this file as it is now
    return {
      /** @param {import('estree').ImportDeclaration | import('estree').ExportNamedDeclaration | import('estree').ExportAllDeclaration} node */
      'ImportDeclaration, ExportNamedDeclaration, ExportAllDeclaration'(node) {
        const source = node.source?.value;
        if (typeof source !== 'string' || !source.startsWith('.')) return;
        const path = pathBack(resolve(dirname(file), source), file);
        if (!path) return;
        const root = context.cwd;
        const shown = [file, ...path].map((p) => p.replace(`${root}/`, '')).join(' → ');
        context.report({ node, message: `import cycle: ${shown}` });
      },
    };
  },
};
