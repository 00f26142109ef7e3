/**
 * GPU Assistant: a left-sidebar panel with the faces Slack has — Quote, Recommend, Requests, Spend and GPUs — over
 * the gpu-assist server extension (src/request.ts), as the Jupyter server's user. Opened from the sidebar or the
 * command palette ("GPU Assistant: Open").
 */
import { ILabShell, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { LabIcon } from '@jupyterlab/ui-components';
import { TabPanel } from '@lumino/widgets';

import { GpusTab } from './gpus';
import { QuoteTab } from './quote';
import { RecommendTab } from './recommend';
import { RequestsTab } from './requests';
import { SpendTab } from './spend';

const COMMAND = 'gpu-assist:open';

export const gpuIcon = new LabIcon({
  name: 'gpu-assist:gpu',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161">' +
    '<path d="M4 7h16v10H4zM6 9v6h12V9zM7 4h2v3H7zM11 4h2v3h-2zM15 4h2v3h-2zM7 17h2v3H7zM11 17h2v3h-2zM15 17h2v3h-2z' +
    'M8 10h8v4H8z"/></g></svg>'
});

/** The sidebar: one tab per task; each tab loads its data when it is first shown. */
export class AssistantPanel extends TabPanel {
  constructor(openCell: (code: string) => Promise<void>) {
    super({ tabsMovable: false });
    this.id = 'gpu-assist-panel';
    this.title.icon = gpuIcon;
    this.title.caption = 'GPU Assistant';
    this.addClass('gpu-assist-panel');
    this.tabBar.node.setAttribute('aria-label', 'GPU Assistant');
    for (const tab of [new QuoteTab(openCell), new RecommendTab(), new RequestsTab(), new SpendTab(), new GpusTab()]) {
      this.addWidget(tab);
    }
  }
}

/** Put `code` in a new cell below the active one of the current notebook (a new notebook when none is open). */
async function openCell(app: JupyterFrontEnd, tracker: INotebookTracker | null, code: string): Promise<void> {
  let panel: NotebookPanel | null = tracker?.currentWidget ?? null;
  if (!panel) {
    panel = (await app.commands.execute('notebook:create-new')) as NotebookPanel;
    await panel.context.ready;
  }
  const notebook = panel.content;
  const active = notebook.activeCell;
  if (!(active && notebook.widgets.length === 1 && active.model.sharedModel.getSource() === '')) {
    NotebookActions.insertBelow(notebook);
  }
  notebook.activeCell?.model.sharedModel.setSource(code);
  app.shell.activateById(panel.id);
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'gpu-assist:sidebar',
  description: 'GPU Assistant sidebar: quote, recommend, requests, spend and GPUs',
  autoStart: true,
  requires: [ILabShell],
  optional: [ICommandPalette, INotebookTracker],
  activate: (
    app: JupyterFrontEnd,
    shell: ILabShell,
    palette: ICommandPalette | null,
    tracker: INotebookTracker | null
  ) => {
    const panel = new AssistantPanel(code => openCell(app, tracker, code));
    shell.add(panel, 'left', { rank: 900 });
    app.commands.addCommand(COMMAND, {
      label: 'GPU Assistant: Open',
      execute: () => shell.activateById(panel.id)
    });
    palette?.addItem({ command: COMMAND, category: 'GPU Assistant' });
  }
};

export default plugin;
