// How often a findings document loses a line its user saved while runs of the tool write it.
//
//   npx tsx bench/findings-race.ts [--trials 10] [--ms 1500] [--editors inplace,rename,vim] [--writers 1,2]
//
// Each trial: a 200-line document, an editor process whose user types a line and saves every
// ~15 ms (in place; by renaming a new file over it; or as vim does: the old file renamed to a
// backup, a new one written in pieces), and one or two tool processes writing a macro block every
// 5 ms, all for `ms`. Before each save the editor reloads the file and checks every line its user
// ever saved is there. Prints, per editor and number of runs: trials, saves, the trials in which a
// saved line was missing at some point, how many times, and the lines still missing at the end.
import { EditorKind, raceOnce } from '../test/unit/findings/raceActors';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

async function main(): Promise<void> {
  const trials = Number(arg('trials', '10'));
  const ms = Number(arg('ms', '1500'));
  console.log(
    '| editor | runs | trials | saves | updates | updates left for later | trials losing a line | times a line was missing | lines missing at the end |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const kind of arg('editors', 'inplace,rename,vim').split(',') as EditorKind[]) {
    for (const writers of arg('writers', '1,2').split(',').map(Number)) {
      let saves = 0;
      let updates = 0;
      let later = 0;
      let losing = 0;
      let missing = 0;
      let atEnd = 0;
      for (let t = 0; t < trials; t++) {
        const r = await raceOnce(kind, writers, ms);
        saves += r.saves;
        updates += r.updates;
        later += r.warnings;
        if (r.lost || r.lostAtEnd.length) losing++;
        missing += r.lost;
        atEnd += r.lostAtEnd.length;
      }
      console.log(`| ${kind} | ${writers} | ${trials} | ${saves} | ${updates} | ${later} | ${losing} | ${missing} | ${atEnd} |`);
    }
  }
}

void main();
