import { demoCommand } from './commands/demo';
import { CliCommand, UsageError } from './command';
import { AGENT_VERSION } from '../remote/agentProtocol';
import { probeCommand } from './commands/probe';
import { SettingsError } from '../core/config/target';
import { macroCommand } from './commands/macro';
import { simulateCommand } from './commands/simulate';
import { analyzeCommand } from './commands/analyze';
import { profileCommand } from './commands/profile';
import { explainCommand } from './commands/explain';
import { compareCommand } from './commands/compare';
import { importCommand } from './commands/import';
import { microCommand } from './commands/micro';
import { serverCommand } from './commands/server';
import { configsCommand } from './commands/configs';
import { reportCommand } from './commands/report';
import { stopExitCode } from './stopSignals';
import { printableLines } from '../shared/printable';

// Each phase adds its subcommand here as it lands.
export const COMMANDS: CliCommand[] = [
  demoCommand,
  macroCommand,
  microCommand,
  simulateCommand,
  analyzeCommand,
  profileCommand,
  explainCommand,
  compareCommand,
  importCommand,
  probeCommand,
  serverCommand,
  configsCommand,
  reportCommand,
];

function help(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length), 8);
  return [
    'infbench — benchmark and profile vLLM / SGLang servers (the Inference Bench CLI)',
    '',
    'Usage: infbench <command> [options]        infbench <command> --help',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
  ].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(help());
    return name ? 0 : 1;
  }
  if (name === '--version') {
    process.stdout.write(`${AGENT_VERSION}\n`);
    return 0;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    process.stderr.write(`infbench: unknown command "${name}".\n\n${help()}`);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(`${command.usage}\n`);
    return 0;
  }
  try {
    return stopExitCode(await command.run(rest));
  } catch (err) {
    if (err instanceof UsageError || err instanceof SettingsError) {
      process.stderr.write(`infbench ${name}: ${err.message}\n`);
      return 2;
    }
    process.stderr.write(`infbench ${name}: ${printableLines(err instanceof Error ? err.message : String(err))}\n`);
    return 1;
  }
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
