/** Reading the end of a child's log file, for error messages. */
import { closeSync, openSync, readSync, statSync } from 'node:fs';

const TAIL_BYTES = 64 * 1024;

/** The last `lines` lines of a text file (at most the last 64 KiB are read); '' when the file is missing. */
export function tailOfFile(path: string, lines: number): string {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return '';
  }
  try {
    const size = statSync(path).size;
    const length = Math.min(size, TAIL_BYTES);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    return tailOfText(buffer.toString('utf8'), lines);
  } finally {
    closeSync(fd);
  }
}

/** The last `lines` non-empty lines of `text`, each indented for display under an error message. */
export function tailOfText(text: string, lines: number): string {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .slice(-lines)
    .map((line) => `    ${line}`)
    .join('\n');
}

/** What a text file holds from byte `offset` on, at most `maxBytes` of it ('' when the file is missing). */
export function textOfFileFrom(path: string, offset: number, maxBytes = TAIL_BYTES): string {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return '';
  }
  try {
    const length = Math.max(0, Math.min(statSync(path).size - offset, maxBytes));
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, offset);
    return buffer.toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** The size of a file now (0 when it is missing): where what a process writes next begins. */
export function sizeOfFile(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}
