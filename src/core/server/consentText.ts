import { ServerStep } from './serverChange';

// A modal taller than the window hides its own buttons: a start that sets dozens of variables is shown
// with its middle elided (the folder, the first variables, the command line and its log kept), and the
// place named by the front end (VS Code's output channel) holds every command whole.
const COMMAND_SHOWN_CHARS = 480;
const CHANGES_SHOWN = 12;

/** A command as the modal shows it: whole when short, else its head and tail around an elision. */
export function commandInModal(command: string, where: string): string {
  if (command.length <= COMMAND_SHOWN_CHARS) return command;
  const head = command.slice(0, 160);
  const tail = command.slice(command.length - (COMMAND_SHOWN_CHARS - 160));
  return `${head} … [${command.length - head.length - tail.length} characters more: the whole command is in ${where}] … ${tail}`;
}

/** The modal's text for a step: every command and change when they fit, bounded when they do not. */
export function consentDetail(step: ServerStep, where: string): { shown: string; whole: string } {
  const lines = (commands: string[], changes: string[], more: number) => [
    'Commands:',
    ...commands.map((c) => `$ ${c}`),
    ...(changes.length ? ['', 'What changes:', ...changes.map((c) => `• ${c}`)] : []),
    ...(more ? [`• … and ${more} more, listed in ${where}`] : []),
    ...(step.estimateS ? ['', `The last start of this recipe took ${Math.round(step.estimateS)} s.`] : []),
  ];
  const whole = lines(step.commands, step.changes, 0).join('\n');
  const changes = step.changes.length > CHANGES_SHOWN ? step.changes.slice(0, CHANGES_SHOWN - 1) : step.changes;
  const shown = lines(
    step.commands.map((c) => commandInModal(c, where)),
    changes,
    step.changes.length - changes.length,
  ).join('\n');
  return { shown, whole };
}
