/**
 * Messages whose content is an array of parts (text, image_url, and any other type): counted (text by the tokenizer,
 * images by IMAGE_TOKENS), previewed, read for facts and quotes, truncated, offloaded, masked, put in the
 * summarizer's transcript, parsed from a recording, and reloaded byte-identical; never "[object Object]", never a
 * throw.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { transcriptOf } from '../../activities/compaction/index.ts';
import { recordOf } from '../../activities/stored.ts';
import { contextReload } from '../../activities/tools.ts';
import { replacementBody, summaryMessage } from '../../engine/apply.ts';
import { extractiveSummary } from '../../engine/extractive.ts';
import { extractFacts } from '../../engine/facts.ts';
import { previewOf, textOf } from '../../engine/messages.ts';
import type { ChatMessage, ContentPart, MessageMeta } from '../../engine/messages.ts';
import type { Operation } from '../../engine/planner/index.ts';
import { CHAT_OVERHEAD, countMessage, IMAGE_TOKENS, loadTokenCounter } from '../../engine/tokens.ts';
import type { TokenCounter } from '../../engine/tokens.ts';
import { replayResponder } from '../../llm/offline-model.ts';
import { parseSessionJsonl, replyOf, SessionFormatError } from '../../llm/replayed-model.ts';
import type { BlobStore } from '../../storage/s3.ts';

let counter: TokenCounter;
beforeAll(async () => {
  counter = await loadTokenCounter('o200k_base');
});

const IMAGE = 'https://example.com/screens/login-error.png';
const DATA_URL = `data:image/png;base64,${'iVBORw0KGgo'.repeat(2_000)}`;
const parts: ContentPart[] = [
  { type: 'text', text: 'The build fails on src/api/paginate.ts with this screen:' },
  { type: 'image_url', image_url: { url: IMAGE, detail: 'high' } },
  { type: 'image_url', image_url: { url: DATA_URL, detail: 'low' } },
  { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
  { type: 'text', text: "You must not touch the database schema.\nError: ECONNREFUSED 10.0.0.7:5432\nit's 3 s late" },
];
const message: ChatMessage = { role: 'user', content: parts };
const REF = 'agents/trip/life-1/messages/m000007.json';
const meta: MessageMeta = { id: 'm000007', role: 'user', tokens: 2_000, chars: 160, key: REF };

const noObjectObject = (text: string) => expect(text).not.toContain('[object Object]');

describe('content parts', () => {
  it('textOf: the text parts joined by newlines; other parts left out or rendered; strings and null as they are', () => {
    expect(textOf(parts)).toBe(`${(parts[0] as { text: string }).text}\n${(parts[4] as { text: string }).text}`);
    expect(textOf(parts, (p) => `<${p.type}>`)).toContain('screen:\n<image_url>\n<image_url>\n<input_audio>\nYou must');
    expect(textOf('plain')).toBe('plain');
    expect(textOf(null)).toBe('');
    expect(textOf(undefined)).toBe('');
    expect(textOf([{ type: 'text' }])).toBe(''); // a malformed text part is not text
  });

  it('counting: text parts by the tokenizer, an image by the documented estimate, other parts by their JSON', () => {
    const texts = parts.filter((p) => p.type === 'text').map((p) => counter.count((p as { text: string }).text));
    const expected =
      CHAT_OVERHEAD.perMessage +
      counter.count('user') +
      texts[0]! +
      texts[1]! +
      IMAGE_TOKENS.high +
      IMAGE_TOKENS.low +
      counter.count(JSON.stringify(parts[3]));
    expect(countMessage(counter, message)).toBe(expected);
    expect(IMAGE_TOKENS).toEqual({ low: 85, high: 765 });
    // auto (or no detail) counts as high; the data URL's bytes are not counted as text.
    const auto: ChatMessage = { role: 'user', content: [{ type: 'image_url', image_url: { url: DATA_URL } }] };
    expect(countMessage(counter, auto)).toBe(CHAT_OVERHEAD.perMessage + counter.count('user') + 765);
    expect(countMessage(counter, { role: 'user', content: [] })).toBe(CHAT_OVERHEAD.perMessage + 1);
  });

  it('previews show the text and [image]; the record counts the text parts’ characters', () => {
    const preview = previewOf(parts);
    expect(
      preview.startsWith('The build fails on src/api/paginate.ts with this screen: [image] [image] [input_audio]'),
    ).toBe(true);
    noObjectObject(preview);
    const record = recordOf(message, { id: meta.id, key: REF, tokens: 1_000 });
    expect(record.chars).toBe(textOf(parts).length);
    expect(record.preview).toBe(preview);
  });

  it('facts and the extractive summary read the text parts', () => {
    const facts = extractFacts([message]);
    expect(facts.map((f) => f.text)).toEqual(
      expect.arrayContaining([
        'src/api/paginate.ts',
        'You must not touch the database schema.',
        'Error: ECONNREFUSED 10.0.0.7:5432',
        '3 s',
      ]),
    );
    expect(facts.every((f) => f.fromUser)).toBe(true);
    const summary = extractiveSummary([message, { role: 'assistant', content: [{ type: 'text', text: 'Fixed it.' }] }]);
    expect(summary.task_overview).toContain('- user: The build fails on src/api/paginate.ts');
    expect(summary.current_state).toBe('Last answer: Fixed it.');
    for (const field of Object.values(summary) as string[]) noObjectObject(field);
  });

  it('the summarizer’s transcript: the text, each image as [image]', () => {
    const transcript = transcriptOf([message, { role: 'assistant', content: null }]);
    expect(transcript).toContain(
      '### user\nThe build fails on src/api/paginate.ts with this screen:\n[image]\n[image]',
    );
    expect(transcript).not.toContain(DATA_URL.slice(0, 40));
    noObjectObject(transcript);
  });

  it('truncation cuts the text parts and leaves a stub naming the stored original for each image', () => {
    const op: Extract<Operation, { op: 'truncate' }> = {
      op: 'truncate',
      id: meta.id,
      headChars: 70,
      tailChars: 30,
      tokens: 60,
      maxTokens: 60,
    };
    const body = replacementBody(message, meta, op, '[… {omitted} characters cut; see {ref} …]', { counter });
    const text = body.content as string;
    expect(typeof body.content).toBe('string');
    expect(text.startsWith('The build fails')).toBe(true);
    expect(text).toMatch(/\[… \d+ characters cut; see agents\/trip\/life-1\/messages\/m000007\.json …\]/);
    expect(countMessage(counter, body)).toBeLessThanOrEqual(60);
    noObjectObject(text);
    // Room for everything: the text whole, each part that is not text a stub naming the original.
    const roomy = replacementBody(message, meta, { ...op, maxTokens: 1_000 }, '[cut]', { counter });
    expect(roomy.content).toBe(
      [
        (parts[0] as { text: string }).text,
        `[image not kept here: the original message, with it, is stored at ${REF}]`,
        `[image not kept here: the original message, with it, is stored at ${REF}]`,
        `[input_audio part not kept here: the original message, with it, is stored at ${REF}]`,
        (parts[4] as { text: string }).text,
      ].join('\n'),
    );
  });

  it('offload previews take the text and the error lines and paths past the preview; a mask is the stub with them', () => {
    const offloaded = replacementBody(message, meta, { op: 'offload', id: meta.id, previewChars: 30, tokens: 20 }, '', {
      counter,
    });
    expect(offloaded.content).toMatch(
      /^The build fails on src\/api\/pag…\n\[offloaded: \d+ characters in all; read them with context_reload\("agents\/trip\/life-1\/messages\/m000007\.json"\)\]\nIt reported: Error: ECONNREFUSED 10\.0\.0\.7:5432( \| [^\n]+)?$/,
    );
    const masked = replacementBody(message, meta, { op: 'mask', id: meta.id, tokens: 20 }, '', { counter });
    expect(masked.content).toContain(`context_reload("${REF}")`);
    expect(masked.content).toMatch(/\nIt reported: Error: ECONNREFUSED 10\.0\.0\.7:5432 \| src\/api\/paginate\.ts$/);
  });

  it('a parts message round-trips through replacementBody: the original untouched, the replacement plain JSON', () => {
    const stored = JSON.stringify(message);
    for (const op of [
      { op: 'truncate', id: meta.id, headChars: 40, tailChars: 20, tokens: 50 },
      { op: 'truncate', id: meta.id, headChars: 40, tailChars: 20, tokens: 50, maxTokens: 50 },
      { op: 'offload', id: meta.id, previewChars: 40, tokens: 30 },
      { op: 'mask', id: meta.id, tokens: 30 },
    ] as const) {
      const body = replacementBody(message, meta, op, '[cut {omitted} of {ref}]', { counter });
      expect(JSON.stringify(message), op.op).toBe(stored); // the original, as stored, byte-identical
      expect(JSON.parse(JSON.stringify(body))).toEqual(body);
      expect(body.role).toBe('user');
      expect(typeof body.content).toBe('string');
      noObjectObject(body.content as string);
      expect(countMessage(counter, body)).toBeGreaterThan(0);
    }
  });

  it('a summary prepended to a parts message keeps the parts, images included', () => {
    const host = summaryMessage('[Summary of earlier conversation]\nAll good.', message);
    expect(host.content).toEqual([
      { type: 'text', text: "[Summary of earlier conversation]\nAll good.\n\n[The user's message continues:]" },
      ...parts,
    ]);
    expect(summaryMessage('S', { role: 'user', content: 'hi' }).content).toBe(
      "S\n\n[The user's message continues:]\nhi",
    );
  });

  it('context_reload returns the stored parts message byte-identical', async () => {
    const body = JSON.stringify(message);
    const store: BlobStore = {
      bucket: 'test',
      put: () => Promise.resolve(),
      get: (key) => Promise.resolve(key === REF ? body : undefined),
      ensureBucket: () => Promise.resolve(),
    };
    const agent = { agentId: 'trip', life: 'life-1', store };
    const pages = Math.ceil(body.length / 8_000);
    let text = '';
    for (let page = 1; page <= pages; page++) {
      const result = await contextReload.run({ reference: REF, page }, agent);
      text += result.slice(result.indexOf('\n') + 1);
    }
    expect(text).toBe(body);
    expect(JSON.parse(text)).toEqual(message);
  });
});

describe('recordings with content parts', () => {
  it('parseSessionJsonl accepts array content and keeps it as it is', () => {
    const lines = [
      JSON.stringify({ role: 'system', content: 'Be brief.' }),
      JSON.stringify(message),
      JSON.stringify({
        role: 'assistant',
        content: [
          { type: 'text', text: 'Looking.' },
          { type: 'refusal', refusal: '' },
        ],
      }),
    ];
    const session = parseSessionJsonl(lines.join('\n'));
    expect(session[1]).toEqual(message);
    // A recorded reply of parts is sent as its text (a completion carries text).
    expect(replyOf(session[2]!)).toEqual({ content: 'Looking.' });
  });

  it('the offline model quotes the text of a parts message past the end of its recording', async () => {
    const responder = replayResponder([{ role: 'user', content: 'hi' }]);
    const request = { path: '/v1/chat/completions', headers: {}, body: { model: 'm', messages: [message] } };
    const reply = await responder(request, 0);
    expect('content' in reply && reply.content).toContain('You said: "The build fails on src/api/paginate.ts');
    noObjectObject(JSON.stringify(reply));
  });

  it.each([
    [[1], 'line 2: content part 1 must be an object'],
    [[{ type: 'text', text: 'ok' }, null], 'line 2: content part 2 must be an object'],
    [[{ text: 'no type' }], 'line 2: content part 1 must have a string type'],
    [[{ type: 7 }], 'line 2: content part 1 must have a string type'],
    [[{ type: 'text' }], 'line 2: content part 1 (text) must have a string text'],
    [
      [{ type: 'image_url', image_url: 'https://x' }],
      'line 2: content part 1 (image_url) must have an image_url with a string url',
    ],
    [{ type: 'text', text: 'an object, not an array' }, 'line 2: content must be a string, an array of parts or null'],
  ])('rejects content %j naming the line', (content, error) => {
    const text = `${JSON.stringify({ role: 'user', content: 'hi' })}\n${JSON.stringify({ role: 'user', content })}`;
    expect(() => parseSessionJsonl(text)).toThrow(SessionFormatError);
    expect(() => parseSessionJsonl(text)).toThrow(error);
  });
});
