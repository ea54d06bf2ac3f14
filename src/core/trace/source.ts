import { closeSync, createReadStream, openSync, readSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { setImmediate as nextTurn } from 'node:timers/promises';
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
 * A plain JSON file, read straight into one buffer that the reader parses in place: what an event
 * cut by the end of a read leaves is moved to the front, and the next read lands after it.
 */
async function readPlain(path: string, reader: TraceJsonReader, fileBytes: number, options: ReadOptions): Promise<ReaderSummary> {
  const fd = openSync(path, 'r');
  let buf = Buffer.allocUnsafe(4 << 20);
  let kept = 0;
  let fileRead = 0;
  let lastProgress = 0;
  let lastTurn = 0;
  try {
    for (;;) {
      if (options.signal?.aborted) throw new Error('Trace analysis was cancelled.');
      // One value longer than the buffer (a huge top-level key): make room, the reader refuses past 64 MB.
      if (kept === buf.length) buf = Buffer.concat([buf, Buffer.allocUnsafe(buf.length)]);
      // A blocking read: parsing a buffer blocks the thread far longer than reading it does, and an
      // awaited read leaves the core idle while the thread pool copies the bytes (a tenth of the time).
      const bytesRead = readSync(fd, buf, kept, buf.length - kept, null);
      if (bytesRead === 0) break;
      fileRead += bytesRead;
      const length = kept + bytesRead;
      const used = reader.pushRegion(buf, length);
      buf.copyWithin(0, used, length);
      kept = length - used;
      if (options.onProgress && fileRead - lastProgress >= 16 << 20) {
        lastProgress = fileRead;
        options.onProgress(fileRead, fileBytes);
      }
      // Now and then a turn of the event loop, so that a cancel (an abort message) gets through.
      if (fileRead - lastTurn >= 32 << 20) {
        lastTurn = fileRead;
        await nextTurn();
      }
    }
  } finally {
    closeSync(fd);
  }
  options.onProgress?.(fileBytes, fileBytes);
  return reader.end();
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
  if (!compressed) return { ...(await readPlain(path, reader, fileBytes, options)), compressed, fileBytes };
  const file = createReadStream(path, { highWaterMark: 1 << 20 });
  let fileRead = 0;
  file.on('data', (b) => {
    fileRead += b.length;
  });
  const stream = file.pipe(createGunzip({ chunkSize: 1 << 20 }));
  file.on('error', (err) => stream.destroy(err));
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
    if (code === 'Z_BUF_ERROR' || code === 'Z_DATA_ERROR') {
      gzipProblem =
        code === 'Z_BUF_ERROR'
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
    if (gzipProblem && err instanceof TraceFormatError && err.offset === 0) {
      // Nothing came out of the gzip stream: the file is not empty, it is not gzip at all past its first bytes.
      throw new TraceFormatError(
        `Not a valid gzip file (${gzipProblem}): it starts as a gzip file does, but nothing in it decompresses. Copy it again from the host, or check that it is the trace.`,
        0,
      );
    }
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
