import { createReadStream, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { createGunzip } from 'node:zlib';
import { EventView, ReaderSummary, TraceFormatError, TraceJsonReader } from './jsonReader';

export interface SourceSummary extends ReaderSummary {
  compressed: boolean;
  /** Size of the file on disk. */
  fileBytes: number;
}

export interface ReadOptions {
  signal?: AbortSignal;
  /** Called now and then with the file bytes consumed so far and the file size. */
  onProgress?: (fileBytesRead: number, fileBytes: number) => void;
}

async function isGzip(path: string): Promise<boolean> {
  const fh = await open(path, 'r');
  try {
    const head = Buffer.alloc(2);
    const { bytesRead } = await fh.read(head, 0, 2, 0);
    return bytesRead === 2 && head[0] === 0x1f && head[1] === 0x8b;
  } finally {
    await fh.close();
  }
}

/**
 * Streams a trace file (plain JSON or gzip, told apart by the magic bytes, not the name) through the
 * incremental reader. A gzip stream that is cut or corrupt ends the input where it broke: what was
 * whole is analysed and `truncated` says what happened.
 */
export async function readTraceFile(path: string, onEvent: (event: EventView) => void, options: ReadOptions = {}): Promise<SourceSummary> {
  const fileBytes = statSync(path).size;
  const compressed = fileBytes >= 2 && (await isGzip(path));
  const reader = new TraceJsonReader(onEvent);
  const file = createReadStream(path, { highWaterMark: 1 << 20 });
  let fileRead = 0;
  file.on('data', (b) => {
    fileRead += b.length;
  });
  const stream = compressed ? file.pipe(createGunzip({ chunkSize: 1 << 20 })) : file;
  if (compressed) file.on('error', (err) => stream.destroy(err));
  let gzipProblem: string | undefined;
  let lastProgress = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (options.signal?.aborted) throw new Error('Trace analysis was cancelled.');
      reader.push(chunk);
      if (options.onProgress && fileRead - lastProgress >= 16 << 20) {
        lastProgress = fileRead;
        options.onProgress(fileRead, fileBytes);
      }
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (compressed && (code === 'Z_BUF_ERROR' || code === 'Z_DATA_ERROR')) {
      gzipProblem = code === 'Z_BUF_ERROR'
        ? 'the gzip stream is cut short (the file was copied or written only in part)'
        : `the gzip data is corrupt (${(err as Error).message})`;
    } else {
      throw err;
    }
  } finally {
    file.destroy();
  }
  options.onProgress?.(fileBytes, fileBytes);
  let summary: ReaderSummary;
  try {
    summary = reader.end();
  } catch (err) {
    if (gzipProblem && err instanceof TraceFormatError) {
      throw new TraceFormatError(`${err.message} Also, ${gzipProblem}.`, err.offset);
    }
    throw err;
  }
  if (gzipProblem) {
    summary.truncated = `${gzipProblem[0].toUpperCase()}${gzipProblem.slice(1)}; ${summary.truncated ?? 'the JSON inside happened to end at a clean point.'}`;
  }
  return { ...summary, compressed, fileBytes };
}
