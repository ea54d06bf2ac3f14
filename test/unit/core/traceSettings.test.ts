import * as assert from 'node:assert/strict';
import { parseTraceSettings } from '../../../src/core/config/traceSettings';
import { SettingsError } from '../../../src/core/config/target';

describe('trace analysis settings', () => {
  it("passes the user's kernel families and step annotation to the analysis", () => {
    const options = parseTraceSettings([{ category: 'all-reduce', pattern: 'my_custom_ar', flags: 'i' }], 'my_step_\\d+');
    assert.deepEqual(options, { extraFamilies: [{ category: 'all-reduce', pattern: 'my_custom_ar', flags: 'i' }], stepAnnotation: 'my_step_\\d+' });
    assert.deepEqual(parseTraceSettings([], ''), {});
  });

  it('names the entry whose regular expression does not compile', () => {
    assert.throws(
      () =>
        parseTraceSettings(
          [
            { category: 'gemm', pattern: 'ok' },
            { category: 'x', pattern: '(unclosed' },
          ],
          undefined,
        ),
      (e: Error) => e instanceof SettingsError && e.message.includes('kernelFamilies[1]') && e.message.includes('(unclosed'),
    );
    assert.throws(() => parseTraceSettings([{ pattern: 'x' }], undefined), /"category" is missing/);
    assert.throws(() => parseTraceSettings({}, undefined), /must be a list/);
    assert.throws(() => parseTraceSettings(undefined, '[bad'), /stepAnnotation/);
  });

  it('refuses a pattern that could hang the analysis on a long kernel name, saying why', () => {
    assert.throws(
      () => parseTraceSettings([{ category: 'mine', pattern: '(x+)+y' }], undefined),
      (e: Error) => e instanceof SettingsError && /kernelFamilies\[0\]: "\(x\+\)\+y" is refused: it repeats a group/.test(e.message),
    );
    assert.throws(() => parseTraceSettings(undefined, '.*step.*\\d+'), /stepAnnotation: .* to the power 4/);
  });
});
