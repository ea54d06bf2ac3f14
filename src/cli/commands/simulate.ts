import { CliCommand, parseCommandArgs } from '../command';
import { nonNegativeNumber } from '../flags';
import { SimulatorOptions, startSimulator } from '../../core/macro/simulator';

const USAGE = `infbench simulate — start the inference-bench SIMULATOR (a vLLM-API server with a known timing model)

Usage: infbench simulate [options]

Not a model: it answers vLLM's OpenAI-compatible API (/v1/completions, /v1/chat/completions, /v1/models,
/metrics, /tokenize, /start_profile, /stop_profile) with tokens timed by a continuous-batching model,
for demos and for checking that measurements are right. /v1/models reports owned_by
"inference-bench-simulator", and every result taken from it is marked simulated.

Options:
  --port N                   (default 8000; 0 picks a free port)
  --host ADDR                (default 127.0.0.1)
  --preset NAME              kimi-k25-tp8 (default): decode step 21.7 ms at batch 1, 51.5% all-reduce
  --step-base-ms A           step time = A + B x running batch (ms)
  --step-per-seq-ms B
  --prefill-per-token-ms P   added to the step a request joins, per prompt token
  --max-batch N              most running requests; the rest wait
  --zero-cost                every token at once (client-ceiling benchmark)
  --pace-ms X                each stream one token per X ms, no batching
  --profiler-dir DIR         enable /start_profile and /stop_profile; per-rank Kineto traces go here
  --fault SPEC               e.g. error500:every=5, error429:every=3, cut:every=7:after=3, slow:every=4:ms=500
  --python PATH              (default python3)

Ctrl-C stops it.`;

export const simulateCommand: CliCommand = {
  name: 'simulate',
  summary: 'start the SIMULATOR: a vLLM-API server with a known timing model (for demos and tests)',
  usage: USAGE,
  async run(argv: string[]): Promise<number> {
    const v = parseCommandArgs('simulate', {
      args: argv,
      options: {
        port: { type: 'string', default: '8000' },
        host: { type: 'string' },
        preset: { type: 'string' },
        'step-base-ms': { type: 'string' },
        'step-per-seq-ms': { type: 'string' },
        'prefill-per-token-ms': { type: 'string' },
        'max-batch': { type: 'string' },
        'zero-cost': { type: 'boolean' },
        'pace-ms': { type: 'string' },
        'profiler-dir': { type: 'string' },
        fault: { type: 'string', multiple: true },
        python: { type: 'string' },
      },
      strict: true,
    }).values;
    const num = nonNegativeNumber;
    const options: SimulatorOptions = {
      python: v.python,
      host: v.host,
      port: num(v.port, '--port'),
      preset: v.preset,
      stepBaseMs: num(v['step-base-ms'], '--step-base-ms'),
      stepPerSeqMs: num(v['step-per-seq-ms'], '--step-per-seq-ms'),
      prefillPerTokenMs: num(v['prefill-per-token-ms'], '--prefill-per-token-ms'),
      maxBatch: num(v['max-batch'], '--max-batch'),
      zeroCost: v['zero-cost'],
      paceMs: num(v['pace-ms'], '--pace-ms'),
      profilerDir: v['profiler-dir'],
      faults: v.fault,
    };
    const sim = await startSimulator(options, (text) => process.stderr.write(text));
    process.stdout.write(`SIMULATOR (not a real model) serving "${sim.model}" at ${sim.url} — ${sim.mode}. Ctrl-C stops it.\n`);
    await new Promise<void>((res) => {
      const stop = () => void sim.stop().then(res);
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      sim.process.once('exit', () => res());
    });
    return 0;
  },
};
