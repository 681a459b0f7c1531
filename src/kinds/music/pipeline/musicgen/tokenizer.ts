/**
 * The T5 text tokenizer MusicGen's text encoder expects, read from tokenizer.json: a SentencePiece
 * Unigram model (Viterbi over piece scores) after NFKC, whitespace folding and the Metaspace
 * word-boundary mark, with `</s>` appended. Characters no piece covers become `<unk>`.
 */
import { z } from 'zod';

const tokenizerSchema = z.object({
  model: z.object({
    type: z.literal('Unigram'),
    unk_id: z.number().int().nonnegative().nullable().optional(),
    vocab: z.array(z.tuple([z.string(), z.number()])).min(1),
  }),
  added_tokens: z.array(z.object({ id: z.number().int(), content: z.string() })).optional(),
});

const SPACE = '\u2581';

export interface Tokenizer {
  encode(text: string): number[];
  readonly vocabSize: number;
}

export function parseTokenizer(json: unknown): Tokenizer {
  const parsed = tokenizerSchema.safeParse(json);
  if (!parsed.success)
    throw new Error(
      `Expected a Unigram tokenizer.json (T5's) but ${parsed.error.issues[0]?.message ?? 'it does not match'}`,
    );
  const { vocab } = parsed.data.model;
  const unk = parsed.data.model.unk_id ?? vocab.findIndex(([p]) => p === '<unk>');
  const eos = vocab.findIndex(([p]) => p === '</s>');
  if (unk < 0 || eos < 0) throw new Error('Expected <unk> and </s> in tokenizer.json');
  const pieces = new Map<string, { id: number; score: number }>();
  let longest = 1;
  vocab.forEach(([piece, score], id) => {
    if (id === unk || piece === '</s>' || piece === '<pad>') return;
    pieces.set(piece, { id, score });
    longest = Math.max(longest, [...piece].length);
  });
  // An unknown character costs more than any real piece, so Viterbi only uses it when it must.
  const unkScore = Math.min(...vocab.map(([, s]) => s)) - 10;
  return {
    vocabSize: vocab.length,
    encode(text: string): number[] {
      const normal = text.normalize('NFKC').replace(/\s+/g, ' ').trim();
      if (normal === '') return [eos];
      const chars = [...`${SPACE}${normal.replaceAll(' ', SPACE)}`];
      const n = chars.length;
      const best = new Float64Array(n + 1).fill(-Infinity);
      const from = new Int32Array(n + 1);
      const idAt = new Int32Array(n + 1);
      best[0] = 0;
      for (let end = 1; end <= n; end += 1) {
        for (let len = 1; len <= Math.min(longest, end); len += 1) {
          const start = end - len;
          if (best[start] === -Infinity) continue;
          const piece = pieces.get(chars.slice(start, end).join(''));
          const score = piece?.score ?? (len === 1 ? unkScore : undefined);
          if (score === undefined) continue;
          const total = (best[start] as number) + score;
          if (total > (best[end] as number)) {
            best[end] = total;
            from[end] = start;
            idAt[end] = piece?.id ?? unk;
          }
        }
      }
      const ids: number[] = [];
      for (let end = n; end > 0; end = from[end] as number) ids.push(idAt[end] as number);
      ids.reverse();
      // Consecutive unknowns fold into one, as SentencePiece does.
      const folded = ids.filter((id, i) => !(id === unk && ids[i - 1] === unk));
      folded.push(eos);
      return folded;
    },
  };
}
