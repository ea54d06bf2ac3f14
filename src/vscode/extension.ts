import * as vscode from 'vscode';
import { addTargetCommand, openSshConfigFile } from './commands/addTarget';
import { connectTargetCommand, disconnectTargetCommand, editTargetCommand, removeTargetCommand } from './commands/targetCommands';
import { FindingsEditor } from './findings/findingsEditor';
import { insertResultHere } from './findings/insertResult';
import { registerRunCommands } from './commands/registerRunCommands';
import { analyzeTraceCommand } from './commands/analyzeTrace';
import { importVllmResultCommand } from './commands/importVllm';
import { ConnectionManager } from './connections/connectionManager';
import { macroRunner } from './runs/macroRunner';
import { microRunner } from './runs/microRunner';
import { probeRunner, restoreProbedStates } from './runs/probeRunner';
import { profileRunner } from './runs/profileRunner';
import { PhaseRunners } from './runs/phaseRunner';
import { RunController } from './runs/runController';
import { findingsDocumentPath, readSettings, workspaceRoot } from './settings';
import { TargetStates } from './views/targetState';
import { TargetsTreeProvider } from './views/targetsTree';
import { BreakdownViewProvider } from './webview/breakdownView';
import { ResultsPanel, ResultsPanelDeps } from './webview/resultsPanel';
import { pickTarget } from './commands/pickers';
import { showBudgetCommand } from './commands/showBudget';
import { exportReportCommand } from './commands/exportReport';
import { ApiKeyStore } from './connections/apiKeyStore';
import { ServerWatch } from './connections/serverWatch';
import { disposeServerOutputChannel } from './server/serverPrompts';

/** The composition root: creates the owned parts and registers commands; the work lives in the parts. */
export function activate(context: vscode.ExtensionContext): void {
  const started = Date.now();
  const log = vscode.window.createOutputChannel('Inference Bench', { log: true });
  context.subscriptions.push(log, { dispose: disposeServerOutputChannel });

  const states = new TargetStates();
  // One shared SSH connection per host (targets on it share it and its state); host-key prompts and passphrases (SecretStorage) live there.
  const connections = new ConnectionManager(context.secrets, log);
  context.subscriptions.push(connections);
  const apiKeys = new ApiKeyStore(context.secrets);
  const controller = new RunController(connections.connector, log, apiKeys);
  const findings = new FindingsEditor(() => findingsDocumentPath(readSettings()), log, {
    previewBeside: () => readSettings().findingsPreview,
    workspace: workspaceRoot,
  });
  controller.findingsTarget = findings;
  const runners: PhaseRunners = { macro: macroRunner(context.workspaceState), micro: microRunner, profile: profileRunner, probe: probeRunner(states) };
  void controller.refreshRuns().then((runs) =>
    restoreProbedStates(
      workspaceRoot(),
      runs.filter((r) => r.phase === 'probe'),
      states,
    ),
  );
  const tree = new TargetsTreeProvider(controller, states, connections);
  // A server killed meanwhile shows as not answering within seconds, without a probe.
  context.subscriptions.push(new ServerWatch(connections, states, () => readSettings().targets, log, workspaceRoot));
  const breakdown = new BreakdownViewProvider(context.extensionUri, controller, log);
  const panelDeps: ResultsPanelDeps = {
    extensionUri: context.extensionUri,
    source: controller,
    log,
    inspectBreakdown: (runId) => void breakdown.inspect(runId),
  };
  const showResults = (runId?: string, compareRunId?: string) => ResultsPanel.show(panelDeps, runId, compareRunId);
  context.subscriptions.push(
    states,
    controller,
    findings,
    tree,
    breakdown,
    vscode.window.createTreeView('inferenceBench.targets', { treeDataProvider: tree, showCollapseAll: true }),
    vscode.window.registerWebviewViewProvider(BreakdownViewProvider.viewId, breakdown),
  );

  context.subscriptions.push(
    vscode.commands.registerCommand('inferenceBench.setApiKey', async (arg?: unknown) => {
      const target = await pickTarget(arg, "API key for which target's server?");
      // A new key changes what the server lets in: the target is probed again at once, so that its row says whether the key is taken.
      if (target && (await apiKeys.ask(target.name))) await vscode.commands.executeCommand('inferenceBench.probeTarget', target.name);
    }),
    vscode.commands.registerCommand('inferenceBench.addTarget', async () => {
      const added = await addTargetCommand(log);
      if (!added) return;
      tree.refresh();
      // Checked at once, as Remote-SSH connects to a host it adds; a failure says why and offers Edit Target.
      if (!(await connectTargetCommand(added.name, connections))) return;
      void vscode.window
        .showInformationMessage(`Inference Bench: target "${added.name}" added and connected. Probe it to see its GPUs and what the server is.`, 'Probe Target')
        .then((pick) => {
          if (pick) void vscode.commands.executeCommand('inferenceBench.probeTarget', added.name);
        });
    }),
    vscode.commands.registerCommand('inferenceBench.editTarget', async (arg?: unknown) => {
      if (await editTargetCommand(arg)) tree.refresh();
    }),
    vscode.commands.registerCommand('inferenceBench.removeTarget', async (arg?: unknown) => {
      if (await removeTargetCommand(arg, controller, connections)) tree.refresh();
    }),
    vscode.commands.registerCommand('inferenceBench.connectTarget', (arg?: unknown) => connectTargetCommand(arg, connections)),
    vscode.commands.registerCommand('inferenceBench.disconnectTarget', (arg?: unknown) => disconnectTargetCommand(arg, controller, connections)),
    vscode.commands.registerCommand('inferenceBench.openSshConfig', () => openSshConfigFile()),
    vscode.commands.registerCommand('inferenceBench.openFindings', async () => {
      try {
        await findings.ensureOpen(undefined, { focus: true });
      } catch (err) {
        void vscode.window.showErrorMessage(err instanceof Error ? err.message : String(err));
      }
    }),
    vscode.commands.registerCommand('inferenceBench.insertResult', () => insertResultHere(() => findings.resultTables())),
    vscode.commands.registerCommand('inferenceBench.showResults', (runId?: unknown, compareRunId?: unknown) => {
      showResults(typeof runId === 'string' ? runId : undefined, typeof compareRunId === 'string' ? compareRunId : undefined);
    }),
    vscode.commands.registerCommand('inferenceBench.refresh', () => tree.refresh()),
    vscode.commands.registerCommand('inferenceBench.showBudget', (arg?: unknown) =>
      showBudgetCommand({ runs: () => controller.runs(), showBudgetOf: (runId) => ResultsPanel.show(panelDeps, runId, undefined, 'budget') }, arg),
    ),
    vscode.commands.registerCommand('inferenceBench.exportReport', () => exportReportCommand(() => controller.runs())),
    vscode.window.registerWebviewPanelSerializer(ResultsPanel.viewType, {
      deserializeWebviewPanel: async (panel) => {
        context.subscriptions.push(ResultsPanel.revive(panel, panelDeps));
      },
    }),
    ...registerRunCommands({ controller, runners, state: context.workspaceState, showResults, inspectKernels: (runId) => breakdown.inspect(runId) }),
    vscode.commands.registerCommand('inferenceBench.analyzeTrace', (arg?: unknown) => analyzeTraceCommand(controller, log, (runId) => showResults(runId), arg)),
    vscode.commands.registerCommand('inferenceBench.importVllmResult', (arg?: unknown) =>
      importVllmResultCommand(controller, (runId) => showResults(runId), arg),
    ),
  );

  log.info(`Inference Bench activated in ${Date.now() - started} ms`);
}

export function deactivate(): void {
  // Everything is owned by context.subscriptions.
}
