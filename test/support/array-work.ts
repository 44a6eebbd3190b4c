/**
 * A deterministic measure of the work a synchronous call does over arrays, maps and sets, for complexity tests that
 * must not time anything: while `fn` runs, every element an iterator yields (`for … of`, spreads, `Array.from`,
 * `new Set(array)`), every callback an array method calls (`filter`, `find`, `some`, `reduce`, `sort`'s comparator, …)
 * and every element a scanning or copying method touches (`slice`, `indexOf`, `includes`, `concat`, `flat`, `join`)
 * counts one. Indexed `for` loops are not counted. The prototypes are restored when `fn` returns or throws.
 */

type AnyFn = (...args: unknown[]) => unknown;

/** Array methods whose first argument is a callback called once per element visited. */
const CALLBACKS = [
  'filter',
  'map',
  'forEach',
  'reduce',
  'reduceRight',
  'find',
  'findIndex',
  'findLast',
  'findLastIndex',
  'some',
  'every',
  'flatMap',
  'sort',
  'toSorted',
] as const;
/** Array methods that scan the array (counted at its length). */
const SCANS = ['indexOf', 'lastIndexOf', 'includes', 'join'] as const;
/** Array methods that copy (counted at the length of what they return). */
const COPIES = ['slice', 'concat', 'flat', 'toReversed', 'reverse', 'splice'] as const;
/** Iterator-returning methods, counted per element yielded. */
const ITERATORS: [object, (string | symbol)[]][] = [
  [Array.prototype, [Symbol.iterator, 'values', 'keys', 'entries']],
  [Map.prototype, [Symbol.iterator, 'values', 'keys', 'entries']],
  [Set.prototype, [Symbol.iterator, 'values', 'keys', 'entries']],
];

/** Runs `fn` and returns its result with the work it did over arrays, maps and sets. */
export function countArrayWork<T>(fn: () => T): { result: T; work: number } {
  let work = 0;
  const restore: (() => void)[] = [];
  const patch = (target: object, key: string | symbol, wrap: (original: AnyFn) => AnyFn) => {
    const original = (target as Record<string | symbol, AnyFn>)[key]!;
    Object.defineProperty(target, key, { value: wrap(original), writable: true, configurable: true });
    restore.push(() => Object.defineProperty(target, key, { value: original, writable: true, configurable: true }));
  };
  // Counting in a wrapper that is itself uncounted: the patches' own iterations must not count or recurse.
  let inside = false;
  const counted = (original: AnyFn, count: (self: unknown, args: unknown[], result: unknown) => number): AnyFn =>
    function (this: unknown, ...args: unknown[]) {
      if (inside) return original.apply(this, args);
      inside = true;
      try {
        const result = original.apply(this, args);
        work += count(this, args, result);
        return result;
      } finally {
        inside = false;
      }
    };
  try {
    for (const name of CALLBACKS) {
      patch(
        Array.prototype,
        name,
        (original) =>
          function (this: unknown, ...args: unknown[]) {
            const callback = args[0];
            if (typeof callback !== 'function') return original.apply(this, args);
            args[0] = function (this: unknown, ...inner: unknown[]) {
              work++;
              return (callback as AnyFn).apply(this, inner);
            };
            return original.apply(this, args);
          },
      );
    }
    for (const name of SCANS) {
      patch(Array.prototype, name, (original) => counted(original, (self) => (self as unknown[]).length));
    }
    for (const name of COPIES) {
      patch(Array.prototype, name, (original) =>
        counted(original, (_, __, result) => (Array.isArray(result) ? result.length : 0)),
      );
    }
    for (const [proto, keys] of ITERATORS) {
      for (const key of keys) {
        patch(
          proto,
          key,
          (original) =>
            function (this: unknown, ...args: unknown[]) {
              const it = original.apply(this, args) as Iterator<unknown>;
              const next = it.next.bind(it);
              return {
                next(): IteratorResult<unknown> {
                  const step = next();
                  if (!step.done) work++;
                  return step;
                },
                [Symbol.iterator]() {
                  return this;
                },
              };
            },
        );
      }
    }
    return { result: fn(), work };
  } finally {
    for (let i = restore.length - 1; i >= 0; i--) restore[i]!();
  }
}
