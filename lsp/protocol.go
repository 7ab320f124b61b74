package lsp

import "encoding/json"

// The types of the Language Server Protocol (3.17) that the server sends
// and reads: only the fields it uses. Positions count UTF-16 code units,
// the protocol's default encoding, the one every client supports.

type position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

type rng struct {
	Start position `json:"start"`
	End   position `json:"end"`
}

type location struct {
	URI   string `json:"uri"`
	Range rng    `json:"range"`
}

type textDocumentIdentifier struct {
	URI string `json:"uri"`
}

type textDocumentItem struct {
	URI        string `json:"uri"`
	LanguageID string `json:"languageId"`
	Version    int    `json:"version"`
	Text       string `json:"text"`
}

type versionedTextDocumentIdentifier struct {
	URI     string `json:"uri"`
	Version int    `json:"version"`
}

type didOpenParams struct {
	TextDocument textDocumentItem `json:"textDocument"`
}

type didCloseParams struct {
	TextDocument textDocumentIdentifier `json:"textDocument"`
}

type contentChange struct {
	// Range is nil for a change that gives the whole text.
	Range *rng   `json:"range,omitempty"`
	Text  string `json:"text"`
}

type didChangeParams struct {
	TextDocument   versionedTextDocumentIdentifier `json:"textDocument"`
	ContentChanges []contentChange                 `json:"contentChanges"`
}

type positionParams struct {
	TextDocument textDocumentIdentifier `json:"textDocument"`
	Position     position               `json:"position"`
}

type referenceParams struct {
	positionParams
	Context struct {
		IncludeDeclaration bool `json:"includeDeclaration"`
	} `json:"context"`
}

type renameParams struct {
	positionParams
	NewName string `json:"newName"`
}

type documentParams struct {
	TextDocument textDocumentIdentifier `json:"textDocument"`
}

type codeActionParams struct {
	TextDocument textDocumentIdentifier `json:"textDocument"`
	Range        rng                    `json:"range"`
}

type diagnostic struct {
	Range              rng                            `json:"range"`
	Severity           int                            `json:"severity,omitempty"`
	Code               string                         `json:"code,omitempty"`
	Source             string                         `json:"source,omitempty"`
	Message            string                         `json:"message"`
	RelatedInformation []diagnosticRelatedInformation `json:"relatedInformation,omitempty"`
}

type diagnosticRelatedInformation struct {
	Location location `json:"location"`
	Message  string   `json:"message"`
}

type publishDiagnosticsParams struct {
	URI         string       `json:"uri"`
	Version     *int         `json:"version,omitempty"`
	Diagnostics []diagnostic `json:"diagnostics"`
}

type textEdit struct {
	Range   rng    `json:"range"`
	NewText string `json:"newText"`
}

type workspaceEdit struct {
	Changes map[string][]textEdit `json:"changes"`
}

type codeAction struct {
	Title       string         `json:"title"`
	Kind        string         `json:"kind"`
	Diagnostics []diagnostic   `json:"diagnostics,omitempty"`
	IsPreferred bool           `json:"isPreferred,omitempty"`
	Edit        *workspaceEdit `json:"edit,omitempty"`
}

type markupContent struct {
	Kind  string `json:"kind"`
	Value string `json:"value"`
}

type hover struct {
	Contents markupContent `json:"contents"`
	Range    *rng          `json:"range,omitempty"`
}

// The completion item kinds the server uses.
const (
	kindFunction = 3
	kindField    = 5
	kindVariable = 6
	kindModule   = 9
	kindProperty = 10
	kindKeyword  = 14
	kindSnippet  = 15
	kindEnum     = 13
)

type completionItem struct {
	Label            string `json:"label"`
	Kind             int    `json:"kind,omitempty"`
	Detail           string `json:"detail,omitempty"`
	Documentation    string `json:"documentation,omitempty"`
	InsertText       string `json:"insertText,omitempty"`
	InsertTextFormat int    `json:"insertTextFormat,omitempty"` // 1 plain, 2 snippet
	SortText         string `json:"sortText,omitempty"`
}

type completionList struct {
	IsIncomplete bool             `json:"isIncomplete"`
	Items        []completionItem `json:"items"`
}

type documentSymbol struct {
	Name           string           `json:"name"`
	Detail         string           `json:"detail,omitempty"`
	Kind           int              `json:"kind"`
	Range          rng              `json:"range"`
	SelectionRange rng              `json:"selectionRange"`
	Children       []documentSymbol `json:"children,omitempty"`
}

// The symbol kinds the server uses.
const (
	symbolModule    = 2
	symbolClass     = 5
	symbolMethod    = 6
	symbolField     = 8
	symbolFunction  = 12
	symbolVariable  = 13
	symbolInterface = 11
	symbolEvent     = 24
	symbolStruct    = 23
)

type initializeResult struct {
	Capabilities serverCapabilities `json:"capabilities"`
	ServerInfo   struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
	} `json:"serverInfo"`
}

type serverCapabilities struct {
	PositionEncoding   string         `json:"positionEncoding"`
	TextDocumentSync   map[string]any `json:"textDocumentSync"`
	HoverProvider      bool           `json:"hoverProvider"`
	CompletionProvider map[string]any `json:"completionProvider"`
	DefinitionProvider bool           `json:"definitionProvider"`
	ReferencesProvider bool           `json:"referencesProvider"`
	RenameProvider     bool           `json:"renameProvider"`
	FormattingProvider bool           `json:"documentFormattingProvider"`
	SymbolProvider     bool           `json:"documentSymbolProvider"`
	CodeActionProvider map[string]any `json:"codeActionProvider"`
}

// decode reads a request's parameters, tolerating absent ones.
func decode(raw *json.RawMessage, v any) error {
	if raw == nil {
		return nil
	}
	return json.Unmarshal(*raw, v)
}
