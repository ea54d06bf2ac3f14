// Mocha's spec output, plus the run's counts written to INFBENCH_SUMMARY_FILE so that the
// top-level test script can total every layer (the console may not reach us from VS Code).
const Mocha = require('mocha');
const fs = require('node:fs');

class SummaryReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const failures = [];
    runner.on(Mocha.Runner.constants.EVENT_TEST_FAIL, (test, err) => failures.push({ title: test.fullTitle(), error: String((err && err.stack) || err) }));
    runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
      const file = process.env.INFBENCH_SUMMARY_FILE;
      if (!file) return;
      const { passes, failures: failed, pending, tests } = this.stats;
      fs.writeFileSync(file, JSON.stringify({ passed: passes, failed, pending, tests, failures }));
    });
  }
}
module.exports = SummaryReporter;
