import * as assert from 'node:assert/strict';
import { RunReadout } from '../../../webview-ui/src/readout';

// The readout's element stands in as the one method it calls: the cards' canvases need a browser,
// the rule under test (a reading belongs to one run) does not.
function element() {
  const shown: { text: string } = { text: '' };
  return { shown, target: { replaceChildren: (...nodes: unknown[]) => void (shown.text = nodes.map(String).join('')) } };
}

describe("a timeline's hover readout", () => {
  it('drops the reading of the previous run when the card is given another run, and shows the hint again', () => {
    const { shown, target } = element();
    const readout = new RunReadout(target, () => 'Turn the mouse wheel to zoom.', 'run-a');
    assert.equal(shown.text, 'Turn the mouse wheel to zoom.');
    readout.show('1.20 s · request on lane 3: first token after 180 ms');
    assert.equal(readout.follow('run-a'), false, 'the same run, updated as it goes, keeps the reading');
    assert.match(shown.text, /lane 3/);
    assert.equal(readout.follow('run-b'), true);
    assert.equal(shown.text, 'Turn the mouse wheel to zoom.');
  });
});
