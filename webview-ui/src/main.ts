// The webview app's entry. The host's HTML names which view this page is (body data-view).
import { reportErrors } from './api';
import { startBreakdownApp } from './breakdownApp';
import { startResultsApp } from './resultsApp';

reportErrors();
const app = document.getElementById('app')!;
if (document.body.dataset.view === 'breakdown') startBreakdownApp(app);
else startResultsApp(app);
