/**
 * longrun's search attributes on a Temporal namespace: the agent workflows upsert them (contract/search-attributes.ts),
 * and a namespace without one fails every workflow task that upserts it, over and over, with nothing said to the
 * person who started the worker. The embedded stack, cluster mode and docker compose register them; a team's own
 * server needs them registered once, with the commands {@link createCommands} writes (the one place they are spelled
 * out: docs/operations.md shows its output). A worker checks at its start ({@link checkSearchAttributes}) and stops
 * with {@link MissingSearchAttributesError} naming each one that is missing and the command that registers it.
 */
import { status } from '@grpc/grpc-js';
import protos from '@temporalio/proto';
import { SEARCH_ATTRIBUTE_TYPES } from '../contract/search-attributes.ts';
import type { SearchAttributeTypeName } from '../contract/search-attributes.ts';

const { IndexedValueType } = protos.temporal.api.enums.v1;

/** Each type as the operator service takes it. */
export const INDEXED_TYPES = {
  Int: IndexedValueType.INDEXED_VALUE_TYPE_INT,
  Keyword: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  Datetime: IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  Double: IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
} as const;

/** A search attribute longrun needs that a namespace lacks (`registeredAs`: it has it, with another type). */
export interface MissingSearchAttribute {
  name: string;
  type: SearchAttributeTypeName;
  registeredAs?: string;
}

/** The temporal CLI commands that register `attributes` (name → type) on `namespace`, one a line. */
export function createCommands(
  namespace: string,
  attributes: Readonly<Record<string, SearchAttributeTypeName>> = SEARCH_ATTRIBUTE_TYPES,
): string[] {
  return Object.entries(attributes).map(
    ([name, type]) =>
      `temporal operator search-attribute create --namespace ${namespace} --name ${name} --type ${type}`,
  );
}

/**
 * Thrown at a worker's start when its namespace lacks search attributes the agent workflows upsert (or has one with
 * another type): the message names each, its type, and the command that registers it.
 */
export class MissingSearchAttributesError extends Error {
  readonly namespace: string;
  readonly missing: MissingSearchAttribute[];
  constructor(namespace: string, address: string, missing: MissingSearchAttribute[]) {
    const absent = missing.filter((m) => m.registeredAs === undefined);
    const mistyped = missing.filter((m) => m.registeredAs !== undefined);
    const lines = [
      `Temporal namespace ${namespace} at ${address} lacks search attributes the agent workflows upsert (their ` +
        `workflow tasks would fail): ${missing.map(describe).join(', ')}.`,
    ];
    if (absent.length > 0) {
      lines.push(
        'Register them (once per namespace), then start the worker again:',
        ...createCommands(namespace, Object.fromEntries(absent.map((m) => [m.name, m.type]))).map((c) => `  ${c}`),
      );
    }
    for (const m of mistyped) {
      lines.push(
        `${m.name} has another type, which cannot be changed: remove it and register it again (the values it holds ` +
          'stop being searchable):',
        `  temporal operator search-attribute remove --namespace ${namespace} --name ${m.name}`,
        ...createCommands(namespace, { [m.name]: m.type }).map((c) => `  ${c}`),
      );
    }
    super(lines.join('\n'));
    this.name = 'MissingSearchAttributesError';
    this.namespace = namespace;
    this.missing = missing;
  }
}

const describe = (m: MissingSearchAttribute) =>
  m.registeredAs === undefined ? `${m.name} (${m.type})` : `${m.name} (${m.type}, registered as ${m.registeredAs})`;

/** What the operator service answers about a namespace's search attributes (its `listSearchAttributes`). */
export interface SearchAttributeLister {
  operatorService: {
    listSearchAttributes(request: {
      namespace: string;
    }): Promise<{ customAttributes?: Record<string, unknown> | null; systemAttributes?: unknown }>;
  };
}

/** Each type's name as the temporal CLI spells it (`KeywordList`), by the enum value the service answers with. */
const TYPE_NAMES = new Map<number, string>(
  Object.entries(IndexedValueType)
    .filter((entry): entry is [string, number] => typeof entry[1] === 'number')
    .map(([key, value]) => [
      value,
      key
        .replace('INDEXED_VALUE_TYPE_', '')
        .split('_')
        .map((word) => word.charAt(0) + word.slice(1).toLowerCase())
        .join(''),
    ]),
);

/**
 * The search attributes longrun needs that `namespace` lacks or has with another type; or, when the server does not
 * let this connection list them (Temporal Cloud's operator service may refuse a namespace API key: PERMISSION_DENIED,
 * UNIMPLEMENTED, or another error), why nothing could be checked.
 */
export async function missingSearchAttributes(
  connection: SearchAttributeLister,
  namespace: string,
): Promise<MissingSearchAttribute[] | { unchecked: string }> {
  let known: Record<string, unknown>;
  try {
    known = (await connection.operatorService.listSearchAttributes({ namespace })).customAttributes ?? {};
  } catch (error) {
    const { code, details, message } = error as { code?: number; details?: string; message?: string };
    const name = code === undefined ? undefined : status[code];
    return { unchecked: [name, details || message || String(error)].filter(Boolean).join(': ') };
  }
  const missing: MissingSearchAttribute[] = [];
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTE_TYPES)) {
    if (!(name in known)) missing.push({ name, type });
    else if (Number(known[name]) !== Number(INDEXED_TYPES[type])) {
      missing.push({ name, type, registeredAs: TYPE_NAMES.get(Number(known[name])) ?? String(known[name]) });
    }
  }
  return missing;
}

/**
 * A worker's check at its start: throws {@link MissingSearchAttributesError} when `namespace` lacks a search
 * attribute the agent workflows upsert. Returns why nothing was checked when the server did not let it list them
 * (the caller says so and goes on), else undefined.
 */
export async function checkSearchAttributes(
  connection: SearchAttributeLister,
  namespace: string,
  address: string,
): Promise<string | undefined> {
  const missing = await missingSearchAttributes(connection, namespace);
  if (!Array.isArray(missing)) return missing.unchecked;
  if (missing.length > 0) throw new MissingSearchAttributesError(namespace, address, missing);
  return undefined;
}
