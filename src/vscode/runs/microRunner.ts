import * as vscode from 'vscode';
import { MicroOptions } from '../../core/micro/options';
import { MicroPhaseOutcome, runMicroPhase } from '../../core/phases/micro';
import { MicroServerPlan, runMicroAsPlanned } from '../../core/campaign/microAsPlanned';
import { PhaseRunner } from './phaseRunner';
import { STEADY_RESTART } from './profileRunner';
import { withServerStopped, withServerStoppedThenProfiler } from '../../core/server/phaseServer';
import { ServerControlError } from '../../core/server/serverChange';
import { offerPendingRestore, serverOutputChannel, vscodeServerOptions } from '../server/serverPrompts';

export type { MicroServerPlan } from '../../core/campaign/microAsPlanned';
/** The purpose of a change that micro hands over to the profile run (its change.json says it). */
export const MICRO_THEN_PROFILE = 'micro, then profile';

const MODELS = [
  { label: 'kimi-k2.5', detail: 'Kimi-K2.5 (DeepSeek-V3 shapes: hidden 7168, 384 experts, 8 active), INT4 weights — the seed scenario', tp: 8 },
  { label: 'deepseek-v3', detail: 'DeepSeek-V3 shapes, FP8', tp: 8 },
  { label: 'qwen3-235b-a22b', detail: 'Qwen3-235B-A22B shapes', tp: 8 },
  { label: 'llama-3-70b', detail: 'Llama-3-70B shapes', tp: 4 },
  { label: 'llama-3-8b', detail: 'Llama-3-8B shapes', tp: 1 },
];

/**
 * The micro phase: GEMMs at the model's shapes under its tensor-parallel split, all-reduce at decode
 * sizes, launch overhead. The agent checks whether something holds the GPUs and refuses before
 * touching them; the user is then asked, and only with their consent does it run beside it.
 */
export const microRunner: PhaseRunner = {
  phase: 'micro',
  title: 'Micro phase (GEMM, all-reduce, launch)',
  needsGpusFree: false,
  async pickOptions(target, defaults) {
    if (defaults) return { model: 'kimi-k2.5', tp: 8 };
    const picked = await vscode.window.showQuickPick(
      [
        ...MODELS.map((m) => ({ ...m, description: `TP ${m.tp}` })),
        {
          label: 'The model the server runs',
          detail: "Shapes from the config.json of the model the server at the target's URL loaded",
          description: '',
          tp: 8,
        },
      ],
      { title: `Run Micro Phase on ${target.name}`, placeHolder: "Which model's GEMM shapes?", matchOnDetail: true, ignoreFocusOut: true },
    );
    if (!picked) return undefined;
    const tp = await vscode.window.showInputBox({
      title: 'Run Micro Phase: tensor-parallel size',
      prompt: 'GPUs the model is split over (the GEMM shapes are divided by it; all-reduce runs across that many GPUs)',
      value: String(picked.tp),
      ignoreFocusOut: true,
      validateInput: (v) => (/^[1-9]\d*$/.test(v.trim()) ? undefined : 'A whole number, for example 8'),
    });
    if (tp === undefined) return undefined;
    const options: MicroOptions = { tp: Number(tp) };
    if (MODELS.some((m) => m.label === picked.label)) options.model = picked.label;
    return options as Record<string, unknown>;
  },
  async run(ctx, given) {
    // Run All Phases' plan: the stop already agreed in the plan (its consent still shows the commands), and after micro
    // the server started with the profiler for the profile instead of the original.
    const { serverPlan, ...rest } = given as { serverPlan?: MicroServerPlan };
    const options = rest as MicroOptions;
    await offerPendingRestore(ctx);
    const outcome = await runMicroAsPlanned<MicroPhaseOutcome>(serverPlan, {
      micro: (allowBusy) => runMicroPhase(ctx, allowBusy ? { ...options, allowBusy: true } : options),
      refusedBusy: (o) => !!o.busy && !ctx.signal?.aborted,
      askBusy: async (refused) => {
        const stop = 'Stop the Server, Run, Start It Again';
        const beside = 'Run Beside It';
        const pick = await vscode.window.showWarningMessage(
          `Inference Bench: the GPUs of ${ctx.target.name} are busy. ${refused.busy?.message ?? ''} Timings taken beside a loaded server are skewed. Stop the server for the run (it is started again afterwards, also on Cancel), or run now sized to the free memory.`,
          { modal: true },
          stop,
          beside,
        );
        return pick === stop ? 'stop' : pick === beside ? 'beside' : undefined;
      },
      withServerStopped: async (plan, body) => {
        try {
          const server = vscodeServerOptions(ctx.target.name, ctx.signal);
          return plan === 'stop-then-profiler'
            ? (await withServerStoppedThenProfiler(ctx, MICRO_THEN_PROFILE, { ...server, ...STEADY_RESTART }, body)).value
            : (await withServerStopped(ctx, 'micro', server, body)).value;
        } catch (err) {
          if (!(err instanceof ServerControlError)) throw err;
          serverOutputChannel().error(err.message);
          if (err.code !== 'declined') void vscode.window.showErrorMessage(`Inference Bench: ${err.message}`);
          return undefined;
        }
      },
    });
    return outcome?.summary;
  },
};
