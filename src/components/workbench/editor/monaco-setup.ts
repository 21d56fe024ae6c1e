/**
 * Monaco, bundled locally: the core API, only the editor features a TypeScript learner needs,
 * the TypeScript language (syntax + the TS language service in a worker), and the type
 * definitions learner programs see: kafkajs's own and a small Node subset. Runs once per page.
 *
 * monaco-editor 0.57 has an exports map: `monaco-editor/<path>` resolves to `esm/vs/<path>.js`.
 * The TypeScript defaults are a named export of the language's register module in 0.57 (the old
 * `monaco.languages.typescript` namespace is a deprecated stub).
 */
import * as monaco from 'monaco-editor/editor/editor.api';
import {
  ModuleKind,
  ModuleResolutionKind,
  ScriptTarget,
  typescriptDefaults,
} from 'monaco-editor/languages/features/typescript/register';
import EditorWorker from 'monaco-editor/editor/editor.worker?worker';
import TsWorker from 'monaco-editor/language/typescript/ts.worker?worker';
import kafkajsTypes from 'kafkajs/types/index.d.ts?raw';
import learnerNodeTypes from './learner-node-types.d.ts.txt?raw';
// Syntax colouring for TypeScript (the language service alone does not tokenize).
import 'monaco-editor/languages/definitions/typescript/register';
// Editor features. editor.api is the bare editor; these are the parts of editor.main a learner
// uses, without its 80 other languages.
import 'monaco-editor/editor/browser/coreCommands';
import 'monaco-editor/editor/browser/widget/codeEditor/codeEditorWidget';
import 'monaco-editor/editor/contrib/bracketMatching/browser/bracketMatching';
import 'monaco-editor/editor/contrib/caretOperations/browser/caretOperations';
import 'monaco-editor/editor/contrib/clipboard/browser/clipboard';
import 'monaco-editor/editor/contrib/codeAction/browser/codeActionContributions';
import 'monaco-editor/editor/contrib/comment/browser/comment';
import 'monaco-editor/editor/contrib/contextmenu/browser/contextmenu';
import 'monaco-editor/editor/contrib/cursorUndo/browser/cursorUndo';
import 'monaco-editor/editor/contrib/find/browser/findController';
import 'monaco-editor/editor/contrib/folding/browser/folding';
import 'monaco-editor/editor/contrib/format/browser/formatActions';
import 'monaco-editor/editor/contrib/gotoError/browser/gotoError';
import 'monaco-editor/editor/contrib/gotoError/browser/markerSelectionStatus';
import 'monaco-editor/editor/contrib/gotoSymbol/browser/goToCommands';
import 'monaco-editor/editor/contrib/gotoSymbol/browser/link/goToDefinitionAtPosition';
import 'monaco-editor/editor/contrib/hover/browser/hoverContribution';
import 'monaco-editor/editor/contrib/indentation/browser/indentation';
import 'monaco-editor/editor/contrib/linesOperations/browser/linesOperations';
import 'monaco-editor/editor/contrib/multicursor/browser/multicursor';
import 'monaco-editor/editor/contrib/parameterHints/browser/parameterHints';
import 'monaco-editor/editor/contrib/rename/browser/rename';
import 'monaco-editor/editor/contrib/smartSelect/browser/smartSelect';
import 'monaco-editor/editor/contrib/snippet/browser/snippetController2';
import 'monaco-editor/editor/contrib/suggest/browser/suggestController';
import 'monaco-editor/editor/contrib/toggleTabFocusMode/browser/toggleTabFocusMode';
import 'monaco-editor/editor/contrib/wordHighlighter/browser/wordHighlighter';
import 'monaco-editor/editor/contrib/wordOperations/browser/wordOperations';
import 'monaco-editor/editor/standalone/browser/quickAccess/standaloneCommandsQuickAccess';
import 'monaco-editor/editor/common/standaloneStrings';
// Services that editor contributions loaded later ask for. The TypeScript mode (a lazy chunk,
// fetched when the first model is created) imports Monaco's worker glue, internal/common/workers,
// which registers every editor contribution, CodeLens and drop-into-editor among them. An editor
// created after that (a lesson's second lab) instantiates those, but the services they need were
// registered after Monaco set up its services with the first editor: "depends on UNKNOWN service
// ICodeLensCache" and "treeViewsDndService". Registered here, before any editor, they exist.
import 'monaco-editor/editor/contrib/codelens/browser/codeLensCache';
import 'monaco-editor/editor/common/services/treeViewsDndService';
// (The codicon icon font CSS comes in with the suggest widget.)

export { monaco };

/** Where the language service finds the learner's imports (it resolves like Node from file:///). */
export const KAFKAJS_TYPES_URI = 'file:///node_modules/kafkajs/index.d.ts';
export const NODE_TYPES_URI = 'file:///node_modules/@types/node/index.d.ts';

let configured = false;

/** Monaco's vs-dark with comments readable at 4.5:1 (the light theme, vs, already is). */
export const DARK_THEME = 'kiq-dark';

export function setupMonaco(): typeof monaco {
  if (configured) return monaco;
  configured = true;

  // Workers come from our own bundle (Vite `?worker`), never from a CDN.
  self.MonacoEnvironment = {
    getWorker(_workerId: string, label: string) {
      return label === 'typescript' || label === 'javascript' ? new TsWorker() : new EditorWorker();
    },
  };

  // vs-dark's comments (#608b4e on #1e1e1e) are 4.2:1; everything else in it reaches 4.5:1.
  monaco.editor.defineTheme(DARK_THEME, { base: 'vs-dark', inherit: true, rules: [{ token: 'comment', foreground: '7ca668' }], colors: {} });

  typescriptDefaults.setCompilerOptions({
    // 9 = ES2022 and 100 = Bundler in TypeScript 5.9; monaco's enums predate both values.
    target: 9 as ScriptTarget,
    lib: ['es2022'],
    module: ModuleKind.ESNext,
    moduleResolution: 100 as ModuleResolutionKind,
    // Every program is a module, so top-level await works even before the first import.
    moduleDetection: 3,
    strict: true,
    esModuleInterop: true,
    skipLibCheck: true,
    noEmit: true,
    allowNonTsExtensions: true,
  });
  typescriptDefaults.setDiagnosticsOptions({ noSemanticValidation: false, noSyntaxValidation: false });
  typescriptDefaults.addExtraLib(kafkajsTypes, KAFKAJS_TYPES_URI);
  typescriptDefaults.addExtraLib(learnerNodeTypes, NODE_TYPES_URI);
  return monaco;
}

const clientTypes = new Map<string, Promise<void>>();

/**
 * Gives the editor the types of the client a learner picked, once per page. kafkajs's are part of
 * the setup above (one small file); @platformatic/kafka's (about 330 files) come in their own
 * chunk, fetched only when that client is picked.
 */
export function loadClientTypes(client: 'kafkajs' | 'platformatic'): Promise<void> {
  if (client === 'kafkajs') return Promise.resolve();
  let loading = clientTypes.get(client);
  if (!loading) {
    loading = import('./platformatic-types.ts').then(({ platformaticTypeFiles }) => {
      for (const [uri, content] of platformaticTypeFiles()) typescriptDefaults.addExtraLib(content, uri);
    });
    // A failed fetch (the server went away) may be retried on the next pick.
    loading.catch(() => clientTypes.delete(client));
    clientTypes.set(client, loading);
  }
  return loading;
}
