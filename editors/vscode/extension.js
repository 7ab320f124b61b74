// Starts `obelisk lsp` for .plan files, in the workspace folder (where
// obelisk.json names the operator's tools). Install the dependency with
// `npm install` in this directory before packaging or running it.
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const config = vscode.workspace.getConfiguration("obelisk");
  const folder = vscode.workspace.workspaceFolders && vscode.workspace.workspaceFolders[0];
  const server = {
    command: config.get("path", "obelisk"),
    args: ["lsp", ...config.get("args", [])],
    transport: TransportKind.stdio,
    options: folder ? { cwd: folder.uri.fsPath } : {},
  };
  client = new LanguageClient("obelisk", "Obelisk", server, {
    documentSelector: [{ scheme: "file", language: "obelisk" }, { scheme: "untitled", language: "obelisk" }],
  });
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
